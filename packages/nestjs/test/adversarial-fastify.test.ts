import { adversarial } from '@floodgate/testing';
import { nestFastifyFactory } from './app-factory';
import { throttlerStorageAttack } from './throttler-attack';

adversarial(nestFastifyFactory);
throttlerStorageAttack('fastify');
