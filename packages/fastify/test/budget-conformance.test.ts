import { budgetConformance } from '@floodgate/testing';
import { fastifyFactory } from './app-factory';

budgetConformance(fastifyFactory);
