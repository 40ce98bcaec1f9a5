import { adversarial } from '@floodgate/testing';
import { nextFactory } from './suite-factory';

adversarial(nextFactory);
