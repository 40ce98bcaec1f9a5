/**
 * Floodgate for NestJS (docs/nestjs.md): `FloodgateModule.forRoot()` / `forRootAsync()`, `FloodgateGuard`
 * (global, per controller or per handler), the decorators `@RateLimit()`, `@SlowDown()`, `@Concurrency()`
 * and `@SkipRateLimit()`, on the Express and Fastify platforms, in GraphQL resolvers and WebSocket gateways;
 * and `FloodgateThrottlerStorage`, a storage for @nestjs/throttler.
 *
 * @module @floodgate/nestjs
 */
export { FloodgateModule, type FloodgateModuleAsyncOptions } from './module';
export { FloodgateGuard } from './guard';
export { RateLimit, SlowDown, Concurrency, SkipRateLimit } from './decorators';
export { RateLimitException, ClientGoneException } from './exception';
export type {
  FloodgateModuleOptions,
  FloodgateModuleBaseOptions,
  FloodgateRequest,
  RateLimitOptions,
  RateLimitBaseOptions,
  SlowDownOptions,
  ConcurrencyOptions,
} from './options';
export type { Decision, HeaderMode, SlowDownInfo } from '@floodgate/core/adapter';
export { FloodgateThrottlerStorage, type FloodgateThrottlerStorageOptions, type ThrottlerStorageRecord } from './throttler-storage';
