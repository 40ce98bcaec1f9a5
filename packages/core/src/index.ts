/**
 * @floodgate/core: the application API (docs/design.md, section 8). Everything an application uses to
 * limit: createLimiter and its options, the decision, the errors, and the helper an `identify()` calls.
 * What adapter authors need is in @floodgate/core/adapter; the rest is internal and may change.
 *
 * @module @floodgate/core
 */
export { createLimiter } from './limiter';
export type { Limiter, CheckOptions, BlockOptions } from './limiter';
export type { AcquireOptions } from './acquire';
export { createConcurrencyLimiter } from './concurrency/limiter';
export type { ConcurrencyLimiter, Lease, LeaseSource, LeaseDenyReason } from './concurrency/limiter';
export type { ConcurrencyLimiterOptions } from './concurrency/options';
export type { Decision, DecisionSource, DenyReason, PairState } from './decision';
export type { LimiterOptions, FailurePolicy, LimiterMode, LimiterEvent, Logger } from './options';
export type { DecisionEvent, DecisionOutcome, RefundEvent, EventListener } from './events';
export type { LimiterHealth, HealthStatus } from './health';
export type { RuleInput } from './rules';
export type { AlgorithmName } from './algorithms/types';
export type { RedisClient, ScriptClient } from './stores/client';
export { defineClient } from './stores/client';
export { FloodgateError, ConfigError, ArgumentError, StoreError } from './errors';
export type { FloodgateErrorCode, StoreErrorKind } from './errors';
export { normaliseIp } from './identity';
export type { HeaderMode } from './http';
export type { HttpOptions, UnidentifiedPolicy } from './http-limiter';
export type { SlowDownHttpOptions, SlowDownInfo } from './http-slow-down';
export type { ListsInput } from './lists';
export type { OmittableHeader } from './header-filter';
export type { WarningsOption } from './warnings';
