import { budgetConformance } from '@floodgate/testing';
import { nestFastifyFactory } from './app-factory';

budgetConformance(nestFastifyFactory);
