import { conformance, policyConformance } from '@floodgate/testing';
import { expressFactory } from './app-factory';

conformance(expressFactory);
policyConformance(expressFactory);
