import { adversarial } from '@floodgate/testing';
import { nestFastifyFactory } from './app-factory';

adversarial(nestFastifyFactory);
