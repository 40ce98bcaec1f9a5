import { limitsConformance } from '@floodgate/testing';
import { trpcFactory } from './app-factory';

limitsConformance(trpcFactory);
