import { adversarial } from '@floodgate/testing';
import { nestExpressFactory } from './app-factory';
import { throttlerStorageAttack } from './throttler-attack';

adversarial(nestExpressFactory);
throttlerStorageAttack('express');
