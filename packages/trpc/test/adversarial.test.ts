import { adversarial } from '@floodgate/testing';
import { trpcFactory } from './app-factory';

adversarial(trpcFactory);
