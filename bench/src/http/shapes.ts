/*
 * The request shapes of `npm run bench` (issues 7 and 18). Every request carries `x-client-id`; the load
 * generator picks it at random out of CLIENTS or sends one value (hot). The fairness rule: a ratio is
 * compared with a peer's only when both sides do the same work (the same rules on the same identifiers)
 * and deny the same share, or the table says otherwise beside it (every table has a `denied` column).
 *   equal: 1 rule x 1 identifier on both sides, a limit nobody reaches, the default algorithm: equal work.
 *   3x2:   Floodgate 3 rules x 2 identifiers in one check; the peers the same 3 rules stacked on the client
 *          id (3 middlewares, or their union helper): 3 x 1. Limits nobody reaches (0% denied both sides).
 *   multi: 10/s, 120/min, 240/h on the client id and ten times that on its organisation (shared by 10
 *          clients), on both sides: Floodgate's 6 rules scoped with `for` in one check, the peers 6 stacked
 *          middlewares (a union per identifier). Real limits that random clients do not reach: the denied
 *          share stays ~0 on both sides whatever the throughput (it is reported beside the ratio).
 *   hot:   one client, 100 per hour: after the first 100, every request is denied.
 *   settle: a metered API (Express, Fastify, Koa, Hono): 1e9 requests and 1e9 tokens a minute on the client
 *          id, each request counted at an estimate of 500 tokens before the handler and settled below it
 *          after its response (100-399 tokens, fixed per client id), so every request makes a second
 *          Redis call. Floodgate: `cost` + `settle` (a reservation and its settle); the peer is
 *          rate-limiter-flexible, a limiter per unit consumed before the handler (1 request, 500 tokens)
 *          and the tokens limiter rewarded the difference once the response is over. Nobody denied.
 *          Opt-in (BENCH_SHAPES=settle): its 2 variants on 4 frameworks would add ~5 min to a default run.
 */
export type ShapeName = 'equal' | '3x2' | 'multi' | 'hot' | 'settle';
/** The shapes a run takes when BENCH_SHAPES names none. */
export const SHAPES: ShapeName[] = ['equal', '3x2', 'multi', 'hot'];
/** Every shape, in run order: the default ones, then those run only when BENCH_SHAPES lists them. */
export const ALL_SHAPES: ShapeName[] = [...SHAPES, 'settle'];
export const CLIENTS = 10_000;
export const HEADER = 'x-client-id';

export interface RuleSpec {
  limit: number;
  windowMs: number;
  /** Floodgate: the identifier kind the rule is scoped to (`for`), else every identifier. */
  for?: string;
  /** What the rule counts (Floodgate's `unit`), else requests. */
  unit?: string;
}

/** One peer rule: a middleware (or union member) on one identifier of the client. */
export interface PeerRule extends RuleSpec {
  /** The identifier this rule counts, from the client id; `group` names it (one union per group). */
  id: (client: string) => string;
  group: string;
}

export interface Shape {
  name: ShapeName;
  /** Floodgate's rules, checked together. */
  floodgate: RuleSpec[];
  /** Floodgate's identifiers for a client id. */
  identifiers: (client: string) => string[];
  /** The peers' rules: one middleware (or union member) per rule. */
  peers: PeerRule[];
  /** Whether wrk picks a random client per request (else every request is client 'hot'). */
  random: boolean;
  /** A metered request: counted at an estimate of `unit` before the handler, settled at `actual` after its response. */
  budget?: Budget;
}

export interface Budget {
  /** The unit whose cost is known only after the response (the rules of other units count 1 request). */
  unit: string;
  estimate: number;
  /** The actual cost of a client's request: below the estimate, so a settle gives the rest back. */
  actual: (client: string) => number;
}

const HIGH: RuleSpec[] = [
  { limit: 1e9, windowMs: 1_000 },
  { limit: 1e9, windowMs: 60_000 },
  { limit: 1e9, windowMs: 3_600_000 },
];
const MULTI: RuleSpec[] = [
  { limit: 10, windowMs: 1_000 },
  { limit: 120, windowMs: 60_000 },
  { limit: 240, windowMs: 3_600_000 },
];
/*
 * The organisation's rules: ten times a client's, as it has ten clients. With one org limit equal to a
 * client's, the org's share denied grew with throughput (39-47% on a fast server, 3% vs 0.2% between two
 * limiters at different req/s), so the faster side denied more and answered more from its cache.
 * At these limits neither side's random clients reach them at any throughput this machine gives.
 */
const MULTI_ORG: RuleSpec[] = MULTI.map((r) => ({ ...r, limit: r.limit * 10 }));
// The settle shape's rules: one of requests and one of tokens, limits nobody reaches.
const METERED: RuleSpec[] = [
  { limit: 1e9, windowMs: 60_000 },
  { limit: 1e9, windowMs: 60_000, unit: 'tokens' },
];
const client = (c: string): string => `client:${c}`;
// The second identifier: an organisation shared by 10 clients (an API key, a tenant), as real set-ups add.
const org = (c: string): string => `org:${Number(c) % 1000}`;
const two = (c: string): string[] => [client(c), org(c)];
const on = (rules: RuleSpec[], id: (c: string) => string, group: string): PeerRule[] => rules.map((r) => ({ ...r, id, group }));

/** One rule on the client id, on both sides. */
const oneByOne = (name: ShapeName, rule: RuleSpec, random: boolean): Shape => ({
  name,
  floodgate: [rule],
  identifiers: (c) => [client(c)],
  peers: on([rule], client, 'client'),
  random,
});

export const SHAPE: Record<ShapeName, Shape> = {
  equal: oneByOne('equal', { limit: 1e9, windowMs: 60_000 }, true),
  '3x2': { name: '3x2', floodgate: HIGH, identifiers: two, peers: on(HIGH, client, 'client'), random: true },
  multi: {
    name: 'multi',
    floodgate: [...MULTI.map((r) => ({ ...r, for: 'client' })), ...MULTI_ORG.map((r) => ({ ...r, for: 'org' }))],
    identifiers: two,
    peers: [...on(MULTI, client, 'client'), ...on(MULTI_ORG, org, 'org')],
    random: true,
  },
  // An hour, so the window never refills during a run: every request after the first 100 is denied.
  hot: oneByOne('hot', { limit: 100, windowMs: 3_600_000 }, false),
  settle: {
    name: 'settle',
    floodgate: METERED,
    identifiers: (c) => [client(c)],
    peers: on(METERED, client, 'client'),
    random: true,
    budget: { unit: 'tokens', estimate: 500, actual: (c) => 100 + ((Number(c) || 0) % 300) },
  },
};

/** The client id of a request, from any framework's header bag. */
export function clientOf(headers: Record<string, string | string[] | undefined>): string {
  const v = headers[HEADER];
  return typeof v === 'string' ? v : 'none';
}

/** Floodgate's `limits` option for a shape. */
export function floodgateLimits(shape: Shape): { limit: number; window: number; for?: string; unit?: string }[] {
  return shape.floodgate.map((r) => ({
    limit: r.limit,
    window: r.windowMs,
    ...(r.for === undefined ? {} : { for: r.for }),
    ...(r.unit === undefined ? {} : { unit: r.unit }),
  }));
}

/** The peers' rules grouped by identifier (one rate-limiter-flexible union per group). */
export function peerGroups(shape: Shape): PeerRule[][] {
  const groups = new Map<string, PeerRule[]>();
  for (const r of shape.peers) groups.set(r.group, [...(groups.get(r.group) ?? []), r]);
  return [...groups.values()];
}

/*
 * Variants. `floodgate` is the default algorithm; `floodgate:<algorithm>` runs another one (Express, equal
 * and 3x2 only: Redis µs per check per algorithm); `floodgate:headers-off` (Express, equal) sends no headers.
 * Opt-in variants (BENCH_VARIANTS only): `floodgate+autopipeline` (ioredis enableAutoPipelining on the client), `floodgate@before` (the build in BENCH_BEFORE, for an
 * interleaved A/B against a change: bench/scripts/snapshot-before.sh; `floodgate@<build>` from BENCH_BUILDS).
 * `429` (hot only, by default): a hand-written denial with no limiter, what the framework's own 429 costs.
 * Next.js (apps-next.ts): `floodgate` is the proxy's `rateLimit()`, `floodgate-route` the route handler's
 * `routeRateLimit()`, and `429` / `429-route` the hand-written denial in each of those places.
 * `settle` runs Floodgate and rate-limiter-flexible (its settle middleware) on Express, Fastify, Koa and
 * Hono; `rate-limiter-flexible` runs every shape on Express and only `settle` elsewhere (each other
 * framework's own peer runs the rest, and none of those can settle a cost after the response).
 */
// Not sliding-log: it keeps a timestamp per unit, so it takes limits up to 1,000 only (bench:core measures it).
export const ALGORITHM_VARIANTS = ['fixed-window', 'token-bucket'] as const;
export const PER_ALGORITHM_SHAPES: ShapeName[] = ['equal', '3x2'];
/** `floodgate:headers-off`: `headers: false` (Express, equal), beside rate-limiter-flexible's header-less middleware. */
export const HEADERS_OFF = 'headers-off';
/** A hand-written denial with no limiter: `429`, or `429-<where>` (Next.js: `429-route`, in a route handler). */
export const isHand429 = (variant: string): boolean => variant === '429' || variant.startsWith('429-');
export const isOptIn = (variant: string): boolean => variant.startsWith('floodgate+') || variant.startsWith('floodgate@');
export const SETTLE_FRAMEWORKS = ['express', 'fastify', 'koa', 'hono'];
const RLF = 'rate-limiter-flexible';
export function runs(framework: string, variant: string, shape: ShapeName): boolean {
  if (shape === 'settle') return SETTLE_FRAMEWORKS.includes(framework) && (variant === 'floodgate' || variant === RLF || isOptIn(variant));
  if (variant === RLF) return framework === 'express';
  if (variant === `floodgate:${HEADERS_OFF}`) return framework === 'express' && shape === 'equal';
  if (variant.startsWith('floodgate:')) return framework === 'express' && PER_ALGORITHM_SHAPES.includes(shape);
  if (isHand429(variant)) return shape === 'hot';
  return true;
}
