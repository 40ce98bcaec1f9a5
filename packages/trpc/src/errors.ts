import { TRPCError } from '@trpc/server';
import { ConfigError, describeValue, type Decision, type HttpOutcome } from '@floodgate/core/adapter';

/*
 * A refused call is a TRPCError, so the procedure fails alone (the other calls of its batch run) and the
 * client sees tRPC's own error code. The decision rides in `cause`; rateLimitErrorFormatter puts the wait
 * in the error's `data`, where the client can read it.
 */

/** tRPC's error codes by the HTTP status tRPC answers them with (the statuses a refusal may have). */
const CODES = {
  403: 'FORBIDDEN',
  429: 'TOO_MANY_REQUESTS',
  503: 'SERVICE_UNAVAILABLE',
} as const;

type RefusalStatus = keyof typeof CODES;

/** The `cause` of a refusal: the decision, and the wait in milliseconds. */
export class RateLimitExceededError extends Error {
  override readonly name = 'RateLimitExceededError';
  /** How long until a retry can succeed, in milliseconds. */
  readonly retryAfterMs: number;
  constructor(
    message: string,
    /** The decision that refused the call. */
    readonly decision: Decision,
  ) {
    super(message);
    this.retryAfterMs = decision.retryAfterMs;
  }
}

/** Validates `statusCode` and `denyStatusCode`: only a status that tRPC has an error code for. */
export function checkRefusalStatus(option: string, value: unknown): void {
  if (value === undefined || Object.hasOwn(CODES, String(value))) return;
  throw new ConfigError(
    option,
    `must be a status tRPC has an error code for: ${Object.keys(CODES).join(', ')}; got ${describeValue(value)}`,
  );
}

/** The TRPCError a refusal throws: the code of its status, the message of its body, the decision in `cause`. */
export function refusal(outcome: HttpOutcome): TRPCError {
  const message = (outcome.body as { message?: unknown } | undefined)?.message;
  const text = typeof message === 'string' ? message : 'Rate limit exceeded';
  return new TRPCError({
    code: CODES[outcome.status as RefusalStatus] ?? 'TOO_MANY_REQUESTS',
    message: text,
    cause: new RateLimitExceededError(text, outcome.decision!),
  });
}

/** What a refusal tells the client: the wait, in milliseconds and in whole seconds (as Retry-After). */
export interface RateLimitErrorData {
  retryAfterMs: number;
  retryAfter: number;
}

/** The wait of a refused call's error (a TRPCError whose cause is a RateLimitExceededError), else undefined. */
export function rateLimitErrorData(error: unknown): RateLimitErrorData | undefined {
  const cause = error instanceof Error ? error.cause : undefined;
  if (!(cause instanceof RateLimitExceededError)) return undefined;
  return { retryAfterMs: cause.retryAfterMs, retryAfter: Math.max(1, Math.ceil(cause.retryAfterMs / 1000)) };
}

/**
 * An `errorFormatter` for `initTRPC.create()`: tRPC's default shape, with `data.rateLimit` (the wait) on a
 * refused call: `error.data?.rateLimit?.retryAfterMs` on the client.
 */
export function rateLimitErrorFormatter<TShape extends { data: object }>(opts: {
  shape: TShape;
  error: unknown;
}): TShape & { data: { rateLimit?: RateLimitErrorData } } {
  const rateLimit = rateLimitErrorData(opts.error);
  return rateLimit === undefined ? opts.shape : { ...opts.shape, data: { ...opts.shape.data, rateLimit } };
}
