import { conformance, policyConformance } from '@floodgate/testing';
import { honoFactory } from './app-factory';

conformance(honoFactory);
policyConformance(honoFactory);
