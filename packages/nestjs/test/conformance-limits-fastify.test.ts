import { limitsConformance } from '@floodgate/testing';
import { nestFastifyFactory } from './app-factory';

limitsConformance(nestFastifyFactory);
