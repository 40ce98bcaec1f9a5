import { limitsConformance } from '@floodgate/testing';
import { expressFactory } from './app-factory';

limitsConformance(expressFactory);
