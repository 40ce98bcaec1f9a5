import type { Cost, Limiter, LimiterOptions, Logger, WarningsOption } from '@floodgate/core';
import type { CallToolResult, ToolExtra } from './types';

/** What an option's function may return: the value, or a promise of it. */
export type MaybePromise<T> = T | Promise<T>;

/** The options of `rateLimit()`, besides the core limiter's (docs/mcp.md, "Options"). */
export interface McpOwnOptions {
  /** Share an existing `createLimiter(...)` (made with `refunds: true` for a tool that settles) instead of creating one. */
  limiter?: Limiter;
  /**
   * Who a call counts against, from the callback's `extra`: any non-empty string. Default: the transport's
   * authenticated subject (`authInfo.extra.sub`), else its OAuth client id, else the session id; on stdio,
   * the user the process runs as. Answering nothing falls back to the default.
   */
  identify?: (extra: ToolExtra) => string | undefined;
  /** Warnings by name (`identify-empty`, `settle-failed`), or `false` for none. */
  warnings?: WarningsOption;
  /** Where warnings go (default: `process.emitWarning`). */
  logger?: Logger;
}

/**
 * The options: the core limiter's (`redis`, `name`, `limits`, `algorithm`, ...) for a limiter of its own, or
 * a shared `limiter` with none of them beside it (`logger` aside).
 */
export type McpRateLimitOptions =
  | (McpOwnOptions & Omit<LimiterOptions, 'logger'> & { limiter?: undefined })
  | (McpOwnOptions & { limiter: Limiter } & { [K in Exclude<keyof LimiterOptions, 'logger'>]?: undefined });

/** Per tool: what a call costs, and what it actually cost once it ran. `P` is the callback's parameters. */
export interface ToolLimitOptions<P extends unknown[]> {
  /**
   * Units a call counts (default 1): a number for every rule, a cost per unit (`{ requests: 1, tokens: 4000 }`),
   * or a function of the callback's arguments answering either. With `settle`, the estimate.
   */
  cost?: Cost | ((...params: P) => MaybePromise<Cost>);
  /**
   * The actual cost once the callback has answered, from its result (a model's usage, say). The call is
   * then counted with `reserve()` at `cost` and settled at this answer: less gives the difference back,
   * more is charged past the limit and paid off at the limit's rate before the identity is admitted again.
   */
  settle?: (result: CallToolResult, ...params: P) => MaybePromise<Cost>;
  /** Which of the limiter's plans applies to this tool; default the first. */
  plan?: string;
  /**
   * Whether a denial's details go in the result's `structuredContent` (default true). Set false for a tool
   * with an `outputSchema`: the SDK's client checks an error result's structured content against it, and
   * would reject the denial. The details are in `_meta['io.floodgate/denial']` either way.
   */
  structuredContent?: boolean;
}

/** What an application reads back from `rateLimit()`. */
export interface McpRateLimit {
  /**
   * `handler`, limited: give the result to `server.registerTool(name, config, ...)`. Each call is checked
   * under the caller's identity (`identity:<who>`) and, for rules `for: 'tool'`, under the caller on this
   * tool (`tool:<name>:<who>`), in one store call. A denied call answers a tool result with
   * `isError: true`; the callback does not run.
   */
  tool<P extends unknown[]>(
    name: string,
    handler: (...params: P) => CallToolResult | Promise<CallToolResult>,
    options?: ToolLimitOptions<P>,
  ): (...params: P) => Promise<CallToolResult>;
  /** The limiter every call is checked with. */
  readonly limiter: Limiter;
  /** Closes the limiter when it is this one's own (a shared one stays open). */
  close(): Promise<void>;
}
