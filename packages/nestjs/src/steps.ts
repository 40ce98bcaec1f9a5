import {
  createHttpConcurrency,
  createHttpLimiter,
  createHttpSlowDown,
  whenResponseDone,
  type Decision,
  type HttpOutcome,
} from '@floodgate/core/adapter';
import type { Exchange } from './exchange';
import { ClientGoneException, RateLimitException } from './exception';
import type { StepKind } from './options';

/** One limit the guard runs: a rate limit, a slow-down or a concurrency limit, made once from its options. */
export interface Step {
  readonly kind: StepKind;
  /** The limit's name (its limiter's): what `@SkipRateLimit()` names. */
  readonly name: string;
  /**
   * Lets the request on (undefined, or a promise that resolves), or refuses it: a denial known at once is
   * returned, not thrown (a throw costs microseconds of V8's time per denied request, on the path a flood
   * takes); a later one rejects with it. An error throws or rejects.
   */
  run(x: Exchange): Promise<void> | RateLimitException | undefined;
  /** Closes what this step created (a shared `limiter` passed in stays open). */
  close(): Promise<void>;
}

type Req = Exchange['req'];
type Marked = { rateLimit?: Decision; slowDown?: unknown };

/** Default user: `req.user.id`, as Passport (@nestjs/passport) and most auth guards leave it. */
const defaultUser = (req: Req): unknown => (req as { user?: { id?: unknown } }).user?.id;

function writeHeaders(x: Exchange, outcome: { set: HttpOutcome['set']; append?: HttpOutcome['append'] }): void {
  for (const [name, value] of outcome.set) x.set(name, value);
  for (const [name, value] of outcome.append ?? []) x.append(name, value);
}

/** After the response of an admitted request whose limit gives units back: judged once it is over. */
function whenDone(
  x: Exchange,
  outcome: HttpOutcome | undefined,
  completed: (o: HttpOutcome, finished: boolean, status: number, args: readonly unknown[]) => void,
) {
  const raw = x.raw;
  if (outcome?.own === undefined || raw === undefined) return;
  whenResponseDone(raw, (finished) => completed(outcome, finished, raw.statusCode, x.args));
}

/** A promise's value for a step: a denial rejects it. */
const rejectWith = (denial: RateLimitException | undefined): Promise<never> | undefined =>
  denial === undefined ? undefined : Promise.reject(denial);

const owns = (options: object): boolean => (options as { limiter?: unknown }).limiter === undefined;

function rateLimitStep(options: Record<string, unknown>): Step {
  const http = createHttpLimiter<Req>(options, [], defaultUser);
  /** Writes the outcome's headers; the denial, if it is one. */
  const apply = (x: Exchange, outcome: HttpOutcome): RateLimitException | undefined => {
    if (outcome.action === 'error') throw outcome.error;
    if (outcome.decision !== undefined) (x.req as Marked).rateLimit = outcome.decision;
    writeHeaders(x, outcome);
    whenDone(x, outcome, http.completed);
    return outcome.action === 'deny' ? RateLimitException.of(outcome.status, outcome.body!, outcome.decision) : undefined;
  };
  return {
    kind: 'rateLimit',
    name: http.limiter.name,
    run(x) {
      x.checkTrust(http.warn);
      const outcome = http.decide(x.req, x.ip, (x.req as Marked).rateLimit);
      // Synchronous when the block cache already denies the client: no promise for it.
      return outcome instanceof Promise ? outcome.then((o) => rejectWith(apply(x, o))) : apply(x, outcome);
    },
    close: async () => (owns(options) ? http.limiter.close() : undefined),
  };
}

function slowDownStep(options: Record<string, unknown>): Step {
  const http = createHttpSlowDown<Req>(options, [], defaultUser);
  return {
    kind: 'slowDown',
    name: http.limiter.name,
    async run(x) {
      x.checkTrust(http.warn);
      // A WebSocket message has no response to wait on: it is delayed all the same.
      const outcome = await http.run(x.req, x.ip, x.raw ?? (NEVER_CLOSED as never));
      if (outcome.action === 'error') throw outcome.error;
      // The client left during its delay: no handler runs for nobody.
      if (outcome.action === 'gone') throw new ClientGoneException();
      writeHeaders(x, outcome);
      if (outcome.action === 'deny') throw RateLimitException.of(outcome.status, outcome.body!, outcome.decision);
      if (outcome.info !== undefined) (x.req as Marked).slowDown = outcome.info;
      whenDone(x, outcome.outcome, http.completed);
    },
    close: async () => (owns(options) ? http.limiter.close() : undefined),
  };
}

function concurrencyStep(options: Record<string, unknown>): Step {
  const http = createHttpConcurrency<Req>(options, [], defaultUser);
  return {
    kind: 'concurrency',
    name: http.limiter.name,
    async run(x) {
      // Requests in flight are HTTP requests: a WebSocket message has no response to hold a slot until.
      if (x.raw === undefined) return;
      const outcome = await http.enter(x.req, x.ip, x.raw);
      if (outcome.action === 'error') throw outcome.error;
      // The client left before its lease was granted: the lease is released, and no handler runs for nobody.
      if (outcome.action === 'gone') throw new ClientGoneException();
      if (outcome.action === 'next') return;
      writeHeaders(x, outcome);
      throw RateLimitException.of(outcome.status, outcome.body!);
    },
    close: async () => (owns(options) ? http.limiter.close() : undefined),
  };
}

/** Stands in for a response where there is none (a WebSocket message): a delay runs to its end. */
const NEVER_CLOSED = {
  closed: false,
  destroyed: false,
  writableEnded: false,
  writableFinished: false,
  once() {
    return this;
  },
  off() {
    return this;
  },
};

const MAKERS: Record<StepKind, (options: Record<string, unknown>) => Step> = {
  rateLimit: rateLimitStep,
  slowDown: slowDownStep,
  concurrency: concurrencyStep,
};

/** Makes a step: validates its options (a ConfigError naming the option) and creates its limiter. */
export function makeStep(kind: StepKind, options: Record<string, unknown>): Step {
  return MAKERS[kind](options);
}
