import { limitsConformance } from '@floodgate/testing';
import { koaFactory } from './app-factory';

limitsConformance(koaFactory);
