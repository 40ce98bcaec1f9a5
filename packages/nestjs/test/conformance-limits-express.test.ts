import { limitsConformance } from '@floodgate/testing';
import { nestExpressFactory } from './app-factory';

limitsConformance(nestExpressFactory);
