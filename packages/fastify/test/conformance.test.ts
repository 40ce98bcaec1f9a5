import { conformance } from '@floodgate/testing';
import { fastifyFactory } from './app-factory';

conformance(fastifyFactory);
