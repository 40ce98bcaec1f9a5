import { conformance, policyConformance } from '@floodgate/testing';
import { trpcFactory } from './app-factory';

conformance(trpcFactory);
policyConformance(trpcFactory);
