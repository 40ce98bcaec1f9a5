import { limitsConformance } from '@floodgate/testing';
import { nextFactory } from './suite-factory';

limitsConformance(nextFactory);
