/*
 * What Floodgate's own tests build on (@floodgate/core/testing's `seam`, not for applications): a runtime whose
 * time moves only when a test moves it, a limiter on it and on a store of the test's own, and what such a
 * store is made of: the guard every remote store runs its commands through (deadline, first connection,
 * circuit breaker) and the in-memory twin that answers as Redis would (@floodgate/testing's scripted store).
 */
export { createLimiterOn } from './testing';
export { virtualRuntime, type VirtualRuntime } from '../kernel/virtual-runtime';
export { realRuntime, type Runtime } from '../kernel/runtime';
export { GuardedStore, type Link } from '../stores/guarded-store';
export { MemoryStore } from '../stores/memory';
export { BREAKER_THRESHOLD, PROBE_INTERVAL_MS } from '../stores/circuit-breaker';
export type { Store, RunContext } from '../stores/types';
export type { Readiness } from '../stores/clients/types';
export type { Program } from '../scripts/compiler';
export type { Reply } from '../scripts/reply';
export type { Algorithm } from '../scripts/types';
