import { budgetConformance } from '@floodgate/testing';
import { koaFactory } from './app-factory';

budgetConformance(koaFactory);
