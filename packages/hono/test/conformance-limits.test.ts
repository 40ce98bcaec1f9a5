import { limitsConformance } from '@floodgate/testing';
import { honoFactory } from './app-factory';

limitsConformance(honoFactory);
