import { conformance, policyConformance } from '@floodgate/testing';
import { fastifyFactory } from './app-factory';

conformance(fastifyFactory);
policyConformance(fastifyFactory);
