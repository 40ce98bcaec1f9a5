/**
 * @floodgate/core/testing: what an application's own tests need of Floodgate (docs/testing.md). A clock the
 * test drives (`manualClock`, given as a limiter's `clock`), a prefix per test file (`testPrefix`) so limits
 * never leak between files, `resetPrefix` to start a test afresh, and `settled` to await what a response
 * set off (a refund, a settle, a lease release) instead of sleeping. Test code only: a limiter on a manual
 * clock is in test mode.
 *
 * @module @floodgate/core/testing
 */
export { manualClock, resetPrefix, testPrefix, type ManualClock } from './engine/testing';
export { settled, type SettledOptions } from './http/completion';

/**
 * Floodgate's own tests: operational time behind a seam (a virtual runtime) and a limiter on a store of the
 * test's own. Internal: not part of the API, and it may change in any release.
 *
 * @internal
 */
export * as seam from './engine/test-seam';
