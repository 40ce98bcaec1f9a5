import { conformance, policyConformance } from '@floodgate/testing';
import { koaFactory } from './app-factory';

conformance(koaFactory);
policyConformance(koaFactory);
