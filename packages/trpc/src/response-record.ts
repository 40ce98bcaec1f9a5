import type { Decision, HeaderList } from '@floodgate/core/adapter';

/*
 * The rate-limit headers of one HTTP response. A batched request runs each of its calls through the
 * middleware, each a check of its own, concurrently; the response has one set of headers. Per limiter the
 * record keeps the headers of its most restrictive decision (a denial before an admission, the longer
 * wait among denials, the fewer remaining among admissions), whatever order the calls settled in, and
 * responseMeta writes them once every call is over (docs/trpc.md, "Batches").
 */

interface Entry {
  decision: Decision;
  set: HeaderList;
  append: HeaderList;
}

/** One response's rate-limit headers (`ctx.rateLimitResponse`), per limiter: what rateLimitResponseMeta writes. */
export class ResponseRecord {
  private readonly byLimiter = new Map<object, Entry>();

  /** A call's decision: kept when it binds tighter than what this limiter decided on the response so far. */
  note(limiter: object, decision: Decision, set: HeaderList, append: HeaderList): void {
    const kept = this.byLimiter.get(limiter);
    if (kept === undefined || tighter(decision, kept.decision)) this.byLimiter.set(limiter, { decision, set, append });
  }

  /** The headers to write: each limiter's list items, and the single-valued ones of the tightest limiter last (it wins). */
  headers(): Headers {
    const out = new Headers();
    const entries = [...this.byLimiter.values()].sort((a, b) =>
      tighter(a.decision, b.decision) ? 1 : tighter(b.decision, a.decision) ? -1 : 0,
    );
    for (const { set, append } of entries) {
      for (const [name, value] of set) out.set(name, value);
      for (const [name, value] of append) out.append(name, value);
    }
    return out;
  }
}

/** Whether `a` is more restrictive than `b`: a denial before an admission, then the longer wait, then fewer remaining. */
function tighter(a: Decision, b: Decision): boolean {
  if (a.allowed !== b.allowed) return !a.allowed;
  if (!a.allowed) return a.retryAfterMs > b.retryAfterMs;
  return a.remaining < b.remaining;
}

/** The record on a context, if rateLimitContext() made that context. */
export function recordOf(ctx: unknown): ResponseRecord | undefined {
  const record = typeof ctx === 'object' && ctx !== null ? (ctx as { rateLimitResponse?: unknown }).rateLimitResponse : undefined;
  return record instanceof ResponseRecord ? record : undefined;
}

/**
 * The rate-limit headers of a response (the most restrictive decision of its calls, per limiter), for a
 * `responseMeta` of your own: `responseMeta: ({ ctx }) => ({ headers: rateLimitHeaders(ctx) })`. Empty when
 * no limiter ran, or when the context was not made with rateLimitContext().
 */
export function rateLimitHeaders(ctx: unknown): Headers {
  return recordOf(ctx)?.headers() ?? new Headers();
}

/**
 * A `responseMeta` for tRPC's HTTP handlers (standalone, Node, Express, fetch, Next.js): the rate-limit
 * headers of the response, Retry-After on a denial. With httpBatchStreamLink the headers leave before any
 * call has run (`eagerGeneration`), so there are none.
 */
export function rateLimitResponseMeta(opts: { ctx?: unknown }): { headers: Headers } {
  return { headers: rateLimitHeaders(opts.ctx) };
}
