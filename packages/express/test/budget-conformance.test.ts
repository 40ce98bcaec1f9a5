import { budgetConformance } from '@floodgate/testing';
import { expressFactory } from './app-factory';

budgetConformance(expressFactory);
