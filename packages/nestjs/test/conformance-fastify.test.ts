import { conformance, policyConformance } from '@floodgate/testing';
import { nestFastifyFactory } from './app-factory';

conformance(nestFastifyFactory);
policyConformance(nestFastifyFactory);
