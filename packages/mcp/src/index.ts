/**
 * @floodgate/mcp: rate limits for the tools of a Model Context Protocol server made with the official
 * TypeScript SDK (docs/mcp.md).
 *
 * @module @floodgate/mcp
 */
export { rateLimit } from './rate-limit';
export { defaultIdentity } from './identity';
export type { IdentitySource } from './identity';
export type { McpRateLimit, McpRateLimitOptions, McpOwnOptions, ToolLimitOptions, MaybePromise } from './options';
export { DENIAL_META_KEY } from './denial';
export type { ToolDenial } from './denial';
export type { ToolExtra } from './types';
