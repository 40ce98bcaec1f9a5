/*
 * The three request shapes of issue 7. Every request carries `x-client-id`; the load generator picks it
 * at random out of CLIENTS (spread, multi) or sends one value (hot).
 *   spread: limits nobody reaches, so every request passes: the pure cost of limiting.
 *           Floodgate checks 3 rules x 2 identifiers; each peer checks 1 rule x 1 identifier.
 *   hot:    one client, 100 per minute: after the first 100, every request is denied.
 *   multi:  10/s, 120/min, 240/h. Floodgate: the 3 rules on 2 identifiers in one check; peers: the
 *           3 rules stacked (3 middlewares) or their union helper, on the client id only.
 */
export type ShapeName = 'spread' | 'hot' | 'multi';
export const SHAPES: ShapeName[] = ['spread', 'hot', 'multi'];
export const CLIENTS = 10_000;
export const HEADER = 'x-client-id';

export interface RuleSpec {
  limit: number;
  windowMs: number;
}

export interface Shape {
  name: ShapeName;
  /** Floodgate's rules, checked together. */
  floodgate: RuleSpec[];
  /** Floodgate's identifiers for a client id. */
  identifiers: (client: string) => string[];
  /** The peers' rules: one middleware (or union member) per rule, on the client id. */
  peers: RuleSpec[];
  /** Whether wrk picks a random client per request (else every request is client 'hot'). */
  random: boolean;
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
// The second identifier: an organisation shared by 10 clients (an API key, a tenant), as real set-ups add.
const two = (client: string): string[] => [`client:${client}`, `org:${Number(client) % 1000}`];

export const SHAPE: Record<ShapeName, Shape> = {
  spread: { name: 'spread', floodgate: HIGH, identifiers: two, peers: [{ limit: 1e9, windowMs: 60_000 }], random: true },
  hot: {
    name: 'hot',
    floodgate: [{ limit: 100, windowMs: 60_000 }],
    identifiers: (c) => [`client:${c}`],
    peers: [{ limit: 100, windowMs: 60_000 }],
    random: false,
  },
  multi: { name: 'multi', floodgate: MULTI, identifiers: two, peers: MULTI, random: true },
};

/** The client id of a request, from any framework's header bag. */
export function clientOf(headers: Record<string, string | string[] | undefined>): string {
  const v = headers[HEADER];
  return typeof v === 'string' ? v : 'none';
}

/** Floodgate's `limits` option for a shape. */
export function floodgateLimits(shape: Shape): { limit: number; window: number }[] {
  return shape.floodgate.map((r) => ({ limit: r.limit, window: r.windowMs }));
}
