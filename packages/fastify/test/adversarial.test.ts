import { adversarial } from '@floodgate/testing';
import { fastifyFactory } from './app-factory';

adversarial(fastifyFactory);
