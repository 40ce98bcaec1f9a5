import { conformance, policyConformance } from '@floodgate/testing';
import { nestExpressFactory } from './app-factory';

conformance(nestExpressFactory);
policyConformance(nestExpressFactory);
