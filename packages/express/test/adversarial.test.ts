import { adversarial } from '@floodgate/testing';
import { expressFactory } from './app-factory';

adversarial(expressFactory);
