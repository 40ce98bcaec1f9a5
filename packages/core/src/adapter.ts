/**
 * @floodgate/core/adapter: what an adapter for a web framework needs (docs/design.md, section 8), beside the
 * application API of @floodgate/core. An adapter reads the request (IP, user, route options), asks
 * createHttpLimiter's `decide()` for an outcome, and writes it (headers, a denial, or next). The three
 * adapters of this repository are written against this module only.
 *
 * @module @floodgate/core/adapter
 */
export { createHttpLimiter, HTTP_OPTION_KEYS, whenResponseDone } from './http-limiter';
export type { HttpOptions, HttpOutcome, HttpLimiter, UnidentifiedPolicy } from './http-limiter';
export type { LimitsOrLimiter, MaybePromise } from './option-types';
export { createHttpConcurrency, CONCURRENCY_HTTP_OPTION_KEYS } from './http-concurrency';
export type { ConcurrencyHttpOptions, ConcurrencyOutcome, HttpConcurrency } from './http-concurrency';
export { CONCURRENCY_OPTION_KEYS } from './concurrency/options';
export { createHttpSlowDown, SLOW_DOWN_OPTION_KEYS } from './http-slow-down';
export type { SlowDownHttpOptions, SlowDownOutcome, SlowDownInfo, HttpSlowDown } from './http-slow-down';
export { LIMITER_OPTION_KEYS, assertKnownOptions, ownOptions, safeLogger } from './options';
export { describeValue } from './errors';
export { errorBody } from './http';
export type { HeaderList } from './http';
export { rateLimitHeadersOn } from './header-filter';
export { warned, resetWarnings } from './warnings';
export type { WarningName } from './warnings';
export { watchPeerAddresses, watchServerOf } from './peer-address';
export * from './index';
