import type { Limiter } from '../engine/limiter';
import type { LimiterOptions } from '../engine/options';

/** What an option's function may return: the value, or a promise of it. */
export type MaybePromise<T> = T | Promise<T>;

/** Core options that cannot sit beside a shared `limiter` (`logger` can: it also carries the adapter's warnings). */
type LimiterOnly = Exclude<keyof LimiterOptions, 'logger'>;

/**
 * An adapter's options as an application writes them: `limits` for a limiter of the adapter's own, or a
 * shared `limiter` with no core option beside it (`logger` aside). Either is required, so
 * `rateLimit({ name: 'x' })` does not compile (it would throw a ConfigError at run time). `T` is the
 * adapter's options interface, where every option is optional (as `createHttpLimiter` takes them).
 */
export type LimitsOrLimiter<T> =
  | (Omit<T, 'limits' | 'limiter'> & {
      /** One rule or an array: `{ limit, window, for?, burst?, precision? }` (`limit` may be a function of the request), or named plans. */
      limits: T extends { limits?: infer L } ? Exclude<L, undefined> : LimiterOptions['limits'];
      limiter?: undefined;
    })
  | (Omit<T, LimiterOnly | 'limiter'> & {
      /** An existing `createLimiter(...)` to share: several middlewares, one budget. */
      limiter: Limiter;
    } & { [K in LimiterOnly]?: undefined });
