import { conformance, policyConformance } from '@floodgate/testing';
import { express4Factory } from './app-factory';

conformance(express4Factory);
policyConformance(express4Factory);
