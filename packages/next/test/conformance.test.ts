import { conformance, policyConformance } from '@floodgate/testing';
import { nextFactory } from './suite-factory';

conformance(nextFactory);
policyConformance(nextFactory);
