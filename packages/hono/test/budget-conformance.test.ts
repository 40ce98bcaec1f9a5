import { budgetConformance } from '@floodgate/testing';
import { honoFactory } from './app-factory';

budgetConformance(honoFactory);
