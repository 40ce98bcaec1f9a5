/**
 * @floodgate/core: the application API (docs/design.md, section 8). Everything an application uses to
 * limit: createLimiter and its options, the decision, the errors, and the helper an `identify()` calls.
 * What adapter authors need is in @floodgate/core/adapter; the rest is internal and may change.
 *
 * @module @floodgate/core
 */
export { createLimiter } from './engine/limiter';
export type {
  Limiter,
  CheckOptions,
  BlockOptions,
  Cost,
  Reservation,
  ReserveOptions,
  LimiterOverrides,
  Override,
  OverrideInput,
  OverrideSetOptions,
} from './engine/limiter';
export type { OverridesOptions } from './engine/options/nested';
export type { AcquireOptions } from './engine/acquire';
export { createConcurrencyLimiter } from './engine/concurrency/limiter';
export type { ConcurrencyLimiter, Lease, LeaseSource, LeaseDenyReason } from './engine/concurrency/limiter';
export type { ConcurrencyLimiterOptions } from './engine/concurrency/options';
export type { Decision, DecisionSource, DenyReason, PairState } from './kernel/decision';
export type { Logger } from './kernel/logger';
export type { FailurePolicy } from './config/failure-policy';
export type { LimiterOptions, LimiterMode, LimiterEvent } from './engine/options';
export type {
  DecisionEvent,
  DecisionOutcome,
  RefundEvent,
  SettleFailedEvent,
  SettleFailure,
  HealthCheckEvent,
  EventListener,
} from './engine/events';
export type { LimiterHealth, HealthStatus } from './engine/health';
export type { RuleInput } from './config/rules';
export type { AlgorithmName } from './scripts/types';
export type { RedisClient, ScriptClient } from './stores/clients';
export { defineClient } from './stores/clients';
export { FloodgateError, ConfigError, ArgumentError, StoreError } from './kernel/errors';
export type { FloodgateErrorCode, StoreErrorKind } from './kernel/errors';
export { normaliseIp } from './http/identity';
export type { HeaderMode } from './http/headers';
export type { HttpOptions, HttpLimits, UnidentifiedPolicy } from './http/options';
export type { HttpRuleInput } from './http/request-limits';
export type { SlowDownHttpOptions, SlowDownInfo } from './http/http-slow-down';
export type { ListsInput } from './engine/lists';
export type { OmittableHeader } from './http/header-filter';
export type { WarningsOption } from './kernel/warnings';
