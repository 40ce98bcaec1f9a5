import { budgetConformance } from '@floodgate/testing';
import { nextFactory } from './suite-factory';

budgetConformance(nextFactory);
