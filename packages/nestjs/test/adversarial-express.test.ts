import { adversarial } from '@floodgate/testing';
import { nestExpressFactory } from './app-factory';

adversarial(nestExpressFactory);
