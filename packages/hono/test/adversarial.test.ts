import { adversarial } from '@floodgate/testing';
import { honoFactory } from './app-factory';

adversarial(honoFactory);
