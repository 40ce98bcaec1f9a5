import { budgetConformance } from '@floodgate/testing';
import { trpcFactory } from './app-factory';

budgetConformance(trpcFactory);
