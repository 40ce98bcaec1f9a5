/**
 * Floodgate rate limiting for Next.js (docs/next.md): `rateLimit()` in the proxy (`proxy.ts`, or
 * `middleware.ts` on Next 15), `routeRateLimit()` around route handlers, `actionRateLimit()` in server
 * actions. The Node.js runtime, with the app's own Redis client.
 *
 * @module @floodgate/next
 */
import { stampPeers } from './peer';

// The connection's address for every request from here on (peer.ts); @floodgate/next/register does it from Node's start.
stampPeers();

export { rateLimit, chain, remainingOf, type ProxyRateLimit, type ProxyRateLimitOptions, type ProxyRateLimitBaseOptions } from './proxy';
export {
  routeRateLimit,
  withRateLimit,
  type RouteHandler,
  type RouteRateLimit,
  type RouteRateLimitOptions,
  type RouteRateLimitBaseOptions,
} from './route';
export {
  actionRateLimit,
  ActionRateLimitedError,
  type ActionCaller,
  type ActionDenial,
  type ActionRateLimit,
  type ActionRateLimitOptions,
  type ActionRateLimitBaseOptions,
} from './action';
export { stampPeers } from './peer';
export type { ClientAddressOptions } from './client-address';
export type { Matcher } from './matcher';
export type { Decision, HeaderMode } from '@floodgate/core/adapter';
