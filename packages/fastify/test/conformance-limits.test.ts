import { limitsConformance } from '@floodgate/testing';
import { fastifyFactory } from './app-factory';

limitsConformance(fastifyFactory);
