import { adversarial } from '@floodgate/testing';
import { koaFactory } from './app-factory';

adversarial(koaFactory);
