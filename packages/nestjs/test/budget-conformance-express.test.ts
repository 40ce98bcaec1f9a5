import { budgetConformance } from '@floodgate/testing';
import { nestExpressFactory } from './app-factory';

budgetConformance(nestExpressFactory);
