import Redis from 'ioredis';
// The built package, as users run it (`npm run bench:policies` builds first).
import { createLimiter, type Decision, type DecisionSource, type Limiter, type LimiterOptions } from '@floodgate/core';
import { createHttpLimiter, createHttpSlowDown, type HttpLimiter, type HttpSlowDown } from '@floodgate/core/adapter';
import type { ServerResponse } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SERVER_CORE, pin, startBenchRedis } from './lib/machine';
import { thisHost } from './lib/host';
import { envInt, fmt, median } from './lib/stats';
import { commandLine } from './lib/command-line';

/*
 * `npm run bench:policies`: what each policy of issue 14 costs per request next to a plain check, on the
 * same machine, rules and clients: decisions per second at 64 checks in flight from one process, and the
 * Redis CPU per request (INFO commandstats: every command's usec, scripts included, over the requests).
 * Every case admits every request (limits no client reaches), so each does the same work as the plain
 * check plus its policy's own. Redis pinned to LOAD_CORE, this process to SERVER_CORE; median of
 * BENCH_REPS (3) runs of BENCH_CORE_SECONDS (2) each, cases interleaved per rep.
 */
const SECONDS = envInt('BENCH_CORE_SECONDS', 2);
const REPS = envInt('BENCH_REPS', 3);
const CONCURRENCY = 64;
const CLIENTS = 10_000;
const LIMITS = [
  { limit: 1_000_000, window: '1s' },
  { limit: 1_000_000, window: '1m' },
  { limit: 1_000_000, window: '1h' },
];
const UNIT_LIMITS = [...LIMITS.slice(0, 2), { limit: 1_000_000_000, window: '1m', unit: 'tokens' }];
const ESTIMATE = { requests: 1, tokens: 1_000 };
const IDS: [string, string][] = Array.from({ length: CLIENTS }, (_, c) => [`ip:10.0.${c >> 8}.${c & 255}`, `user:u${c}`]);

interface Case {
  name: string;
  options: Partial<LimiterOptions>;
  /** One request: what the adapter would do with the limiter. */
  request(limiter: Limiter, ids: [string, string]): Promise<Decision>;
  /** Where every decision must come from. Default 'redis'. */
  source?: DecisionSource;
}

const check = (l: Limiter, ids: [string, string]): Promise<Decision> => l.check(ids);
let events = 0;
const countEvent = (): void => {
  events++;
};

/*
 * The HTTP layer the adapters share, without a framework: a request is its IP and user; the response of a
 * slowDown a stand-in that stays open (no delay is due: every case admits every request).
 */
interface BenchReq {
  user: string;
}
const OPEN = { closed: false, destroyed: false, writableEnded: false } as unknown as ServerResponse;
const httpOf = new WeakMap<Limiter, HttpLimiter<BenchReq>>();
const slowOf = new WeakMap<Limiter, HttpSlowDown<BenchReq>>();
const http = (l: Limiter): HttpLimiter<BenchReq> => {
  if (!httpOf.has(l))
    httpOf.set(
      l,
      createHttpLimiter<BenchReq>({ limiter: l, warnings: false }, [], (r) => r.user),
    );
  return httpOf.get(l)!;
};
const slow = (l: Limiter): HttpSlowDown<BenchReq> => {
  if (!slowOf.has(l))
    slowOf.set(
      l,
      createHttpSlowDown<BenchReq>({ limiter: l, warnings: false, delayAfter: 1_000_000 }, [], (r) => r.user),
    );
  return slowOf.get(l)!;
};
const request = (ids: [string, string]): [BenchReq, string] => [{ user: ids[1].slice(5) }, ids[0].slice(3)];
async function rateLimited(l: Limiter, ids: [string, string], req = request(ids)[0]): Promise<Decision> {
  const outcome = await http(l).decide(req, request(ids)[1]);
  if (outcome.action !== 'next') throw new Error(`rateLimit answered ${outcome.action}`);
  return outcome.decision!;
}
async function slowed(l: Limiter, ids: [string, string], req = request(ids)[0]): Promise<Decision> {
  const outcome = await slow(l).run(req, request(ids)[1], OPEN);
  if (outcome.action !== 'next' || outcome.info?.delayMs !== 0) throw new Error(`slowDown answered ${outcome.action}`);
  return outcome.decision!;
}

/** A deny list of 1,000 entries no bench client is on: IPv4 and IPv6 ranges of several lengths, and identifiers. */
const DENY = Array.from({ length: 1_000 }, (_, k) =>
  k % 3 === 0 ? `198.${k & 255}.${k >> 8}.0/24` : k % 3 === 1 ? `2001:db8:${k.toString(16)}::/48` : `user:banned${k}`,
);

const CASES: Case[] = [
  { name: 'plain check', options: {}, request: check },
  { name: 'refunds: true, not refunded', options: { refunds: true }, request: check },
  {
    name: 'refunds: check + refund (skipped request)',
    options: { refunds: true },
    request: async (l, ids) => {
      const d = await l.check(ids);
      await l.refund(d);
      return d;
    },
  },
  {
    name: 'plans: check under the 2nd of 3 plans',
    options: {
      limits: { free: LIMITS.slice(0, 2), pro: LIMITS, team: LIMITS.map((r) => ({ ...r, limit: r.limit * 2 })) },
    },
    request: (l, ids) => l.check(ids, { plan: 'pro' }),
  },
  {
    name: 'lockout: configured, not triggered',
    options: { lockout: { after: 5, within: '1m', duration: '10m', scope: 'ip' } },
    request: check,
  },
  // Issue 15: a decision event per check (what @floodgate/metrics subscribes to), with a listener that counts.
  { name: 'events: one onEvent listener', options: { onEvent: countEvent }, request: check },
  { name: 'lists: 1,000 deny entries, not listed', options: { deny: DENY }, request: check },
  { name: 'lists: allow-listed (no store call)', options: { allow: ['10.0.0.0/16'] }, request: check, source: 'list' },
  // Budgets: two rules of requests and one of tokens; the check's cost per unit, then a reservation at the
  // same estimate settled below it (one more script call) or at it (none).
  { name: 'units: requests + tokens, check', options: { limits: UNIT_LIMITS }, request: (l, ids) => l.check(ids, { cost: ESTIMATE }) },
  {
    name: 'units: reserve + settle below the estimate',
    options: { limits: UNIT_LIMITS, refunds: true },
    request: async (l, ids) => {
      const r = await l.reserve(ids, { cost: ESTIMATE });
      if (!(await r.settle({ requests: 1, tokens: 180 }))) throw new Error('the settle gave nothing back');
      return r.decision;
    },
  },
  {
    name: 'units: reserve + settle at the estimate (no call)',
    options: { limits: UNIT_LIMITS, refunds: true },
    request: async (l, ids) => {
      const r = await l.reserve(ids, { cost: ESTIMATE });
      await r.settle(ESTIMATE);
      return r.decision;
    },
  },
  { name: 'http: rateLimit', options: {}, request: (l, ids) => rateLimited(l, ids) },
  { name: 'http: rateLimit, 1,000 deny entries, not listed', options: { deny: DENY }, request: (l, ids) => rateLimited(l, ids) },
  { name: 'http: slowDown, not delayed', options: {}, request: (l, ids) => slowed(l, ids) },
  {
    name: 'http: slowDown + rateLimit on one limiter (counted once)',
    options: {},
    request: async (l, ids) => {
      const req = request(ids)[0];
      await slowed(l, ids, req);
      return rateLimited(l, ids, req);
    },
  },
];

async function perSecond(redis: Redis, c: Case, admin: Redis): Promise<{ rate: number; redisUs: number }> {
  const limiter = createLimiter({
    redis,
    name: `pol-${CASES.indexOf(c)}`,
    prefix: 'benchp',
    algorithm: 'sliding-window',
    limits: LIMITS,
    timeoutMs: 2_000,
    ...c.options,
  });
  // Warm-up: script load, JIT.
  for (let k = 0; k < 200; k++) await c.request(limiter, IDS[k]!);
  await admin.config('RESETSTAT');
  events = 0;
  const deadline = Date.now() + SECONDS * 1000;
  let calls = 0;
  let bad = 0;
  const worker = async (): Promise<void> => {
    while (Date.now() < deadline) {
      calls++;
      const d = await c.request(limiter, IDS[(Math.random() * CLIENTS) | 0]!);
      if (!d.allowed || d.source !== (c.source ?? 'redis')) bad++;
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const info = await admin.info('commandstats');
  await limiter.close();
  if (c.options.onEvent && events < calls) throw new Error(`${c.name}: ${events} events for ${calls} checks`);
  if (bad > 0) throw new Error(`${c.name}: ${bad} requests were not admitted by ${c.source ?? 'redis'}`);
  let usec = 0;
  for (const m of info.matchAll(/^cmdstat_(\w+):calls=\d+,usec=(\d+)/gm)) if (m[1] !== 'config' && m[1] !== 'info') usec += Number(m[2]);
  return { rate: calls / seconds, redisUs: usec / calls };
}

/** `BENCH_POLICIES=lists,slow` runs only the cases whose name has one of these words (and the plain check). */
function selected(): Case[] {
  const only = process.env.BENCH_POLICIES?.split(',').filter(Boolean);
  if (only === undefined || only.length === 0) return CASES;
  return CASES.filter((c, i) => i === 0 || only.some((w) => c.name.toLowerCase().includes(w.toLowerCase())));
}

async function main(): Promise<void> {
  commandLine(
    'npm run bench:policies',
    'what refunds, plans, lockouts, lists and an event listener add to a plain check, in decisions per second and Redis CPU per request',
    [
      { env: 'BENCH_CORE_SECONDS', default: '2', what: 'seconds per measurement' },
      { env: 'BENCH_REPS', default: '3', what: 'runs per case (the median is reported)' },
      { env: 'BENCH_POLICIES', default: 'all', what: 'a comma list of words: only the cases whose name has one (and the plain check)' },
    ],
    'BENCH_POLICIES=lists,lockout npm run bench:policies',
  );
  pin(process.pid, SERVER_CORE);
  const r = await startBenchRedis();
  const redis = new Redis(r.url);
  const admin = new Redis(r.url);
  const cases = selected();
  const runs = new Map<Case, { rate: number; redisUs: number }[]>(cases.map((c) => [c, []]));
  try {
    for (let rep = 0; rep < REPS; rep++) {
      for (const c of cases) {
        const m = await perSecond(redis, c, admin);
        runs.get(c)!.push(m);
        process.stderr.write(`rep ${rep + 1} ${c.name}: ${fmt(m.rate)}/s, ${m.redisUs.toFixed(1)} µs Redis CPU per request\n`);
      }
    }
  } finally {
    redis.disconnect();
    admin.disconnect();
    await r.stop();
  }
  const base = median(runs.get(cases[0]!)!.map((m) => m.rate));
  const rows = cases.map((c) => {
    const ms = runs.get(c)!;
    const rate = median(ms.map((m) => m.rate));
    return { policy: c.name, perSecond: rate, vsPlain: rate / base, redisUsPerRequest: median(ms.map((m) => m.redisUs)) };
  });
  const dir = join(__dirname, '..', 'results');
  mkdirSync(dir, { recursive: true });
  const meta = {
    date: new Date().toISOString(),
    seconds: SECONDS,
    reps: REPS,
    concurrency: CONCURRENCY,
    rules: 3,
    identifiers: 2,
    host: thisHost(),
  };
  // A selection of cases is a look, not the record.
  if (cases.length === CASES.length) writeFileSync(join(dir, 'policies.json'), `${JSON.stringify({ meta, rows }, null, 2)}\n`);
  const lines = [
    '| policy | requests/s (64 in flight) | vs plain check | Redis CPU µs per request |',
    '| --- | ---: | ---: | ---: |',
    ...rows.map((x) => `| ${x.policy} | ${fmt(x.perSecond)} | ${x.vsPlain.toFixed(2)} | ${x.redisUsPerRequest.toFixed(1)} |`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
