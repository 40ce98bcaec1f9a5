import { conformance, policyConformance } from '@floodgate/testing';
import { koa2Factory } from './app-factory';

conformance(koa2Factory);
policyConformance(koa2Factory);
