/**
 * @floodgate/core/adapter: what an adapter for a web framework needs (docs/design.md, section 8), beside the
 * application API of @floodgate/core. An adapter reads the request (IP, user, route options), asks
 * createHttpLimiter's `decide()` for an outcome, and writes it (headers, a denial, or next). The
 * adapters of this repository are written against this module only.
 *
 * @module @floodgate/core/adapter
 */
export { appendHeaderItem, whenResponseDone } from './http/node';
export { createHttpLimiter } from './http/http-limiter';
export type { HttpLimiter } from './http/http-limiter';
export { HTTP_OPTION_KEYS, INHERITED_OPTION_KEYS, checkCostFits, ownOrShared, rulesOfEveryPlan } from './http/options';
export { reservations, assertSettleable } from './http/settle';
export type { SettleFn } from './http/settle';
export { retryAfterSeconds } from './http/headers';
export { logWarning, resolveWarnings } from './kernel/warnings';
export type { HttpOptions, HttpLimits, UnidentifiedPolicy } from './http/options';
export type { HttpRuleInput } from './http/request-limits';
export type { HttpOutcome } from './http/outcome';
export type { ResponseEnd, ResponseLike } from './http/node';
export type { LimitsOrLimiter, MaybePromise } from './http/option-types';
export { createHttpConcurrency, CONCURRENCY_HTTP_OPTION_KEYS } from './http/http-concurrency';
export type { ConcurrencyHttpOptions, ConcurrencyOutcome, HttpConcurrency } from './http/http-concurrency';
export { CONCURRENCY_OPTION_KEYS } from './engine/concurrency/options';
export { createHttpSlowDown, SLOW_DOWN_OPTION_KEYS } from './http/http-slow-down';
export type { SlowDownHttpOptions, SlowDownOutcome, SlowDownInfo, HttpSlowDown } from './http/http-slow-down';
export { safeLogger } from './kernel/logger';
export { assertKnownOptions, ownOptions } from './config/own-options';
export { LIMITER_OPTION_KEYS } from './engine/options';
export { describeValue } from './kernel/errors';
export { errorBody } from './http/headers';
export type { HeaderList } from './http/headers';
export { rateLimitHeadersOn } from './http/header-filter';
export { warned, resetWarnings } from './kernel/warnings';
export type { WarningName } from './kernel/warnings';
export { watchPeerAddresses, watchServerOf } from './http/peer-address';
export { resolveIpv6Subnet, userKey } from './http/identity';
export { track as trackResponseWork } from './http/completion';
export { checkProxyTrust, trustWarned } from './http/proxy-trust';
export type { TrustReading, TrustSetting } from './http/proxy-trust';
export { webClientAddress } from './http/web/client-address';
export type { TrustProxyOption, WebClientAddress } from './http/web/client-address';
export { WebResponseEnd, watchResponse } from './http/web/response-end';
export * from './index';
