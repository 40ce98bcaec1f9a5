import { conformance, policyConformance } from '@floodgate/testing';
import { nextFactory } from './suite-factory';

// A hang guard, not a bound: Next's own server spends about a millisecond of CPU on each request, and the
// suites' longest tests send 300 in a row, which outlasted jest's 30 s on a busy machine.
jest.setTimeout(180_000);

conformance(nextFactory);
policyConformance(nextFactory);
