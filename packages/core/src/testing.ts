/**
 * @floodgate/core/testing: what an application's own tests need of Floodgate (docs/testing.md). A clock the
 * test drives (`manualClock`, given as a limiter's `clock`), a prefix per test file (`testPrefix`) so limits
 * never leak between files, and `resetPrefix` to start a test afresh. Test code only: a limiter on a
 * manual clock is in test mode.
 *
 * @module @floodgate/core/testing
 */
export { manualClock, resetPrefix, testPrefix, type ManualClock } from './engine/testing';

/**
 * Floodgate's own tests: operational time behind a seam (a virtual runtime) and a limiter on a store of the
 * test's own. Internal: not part of the API, and it may change in any release.
 *
 * @internal
 */
export * as seam from './engine/test-seam';
