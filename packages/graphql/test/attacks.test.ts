import { settled } from '@floodgate/core/testing';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { apolloRateLimit, useRateLimit, type GraphqlRateLimitOptions } from '@floodgate/graphql';
import { post, type Calls } from './schema';
import { serveApollo, serveYoga } from './serve';

/*
 * The attacks a per-request limiter misses, mounted on real servers over real sockets against a real
 * redis-server: alias, batch, fragment, nested-list and deep floods, a client lying about list sizes, and
 * concurrent operations racing their settles. With FLOODGATE_FLOOD_FIGURES=1 each prints what it measured.
 */

const redis = connect();
const closing = closeAfterEach();
const figures = process.env.FLOODGATE_FLOOD_FIGURES === '1';
const report = (line: string): void => {
  if (figures) process.stdout.write(`${line}\n`);
};

type Plugin = ReturnType<typeof useRateLimit> | ReturnType<typeof apolloRateLimit>;
const SERVERS = [
  { name: 'yoga', make: (o: GraphqlRateLimitOptions) => useRateLimit(o), serve: serveYoga },
  { name: 'apollo', make: (o: GraphqlRateLimitOptions) => apolloRateLimit(o), serve: serveApollo },
] as const;

describe.each(SERVERS)('$name', ({ name, make, serve }) => {
  async function start(options: Omit<GraphqlRateLimitOptions, 'redis'>, batching = false) {
    const calls: Calls = {};
    const plugin: Plugin = closing(make({ redis, prefix: uniquePrefix('gql'), ...options }));
    const server = closing(await serve([plugin], calls, { batching }));
    return { calls, plugin, url: server.url };
  }
  /** What the plugin's limiter holds for the search limit of the client on 127.0.0.1 (a peek: nothing counted). */
  async function remaining(plugin: Plugin, kind: string, unit = kind, identity = 'ip:127.0.0.1'): Promise<number | undefined> {
    const limiter = plugin.limiter!;
    const units = [...new Set(limiter.rules.map((r) => r.unit ?? 'requests'))];
    const decision = await limiter.peek(`${kind}:${identity}`, { cost: Object.fromEntries(units.map((u) => [u, 0])) });
    return decision.states.find((s) => (s.unit ?? 'requests') === unit)?.remaining;
  }

  test('alias flood: 100 aliases of a field limited to 5 a minute are one operation of 100, denied whole, nothing spent', async () => {
    const { calls, plugin, url } = await start({});
    const query = `{ ${Array.from({ length: 100 }, (_, i) => `a${i}: search { id }`).join(' ')} }`;
    const denied = await post(url, { query });
    expect(denied.status).toBe(429);
    expect(Number(denied.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(denied.body.data ?? null).toBeNull();
    expect(denied.body.errors![0]!.extensions).toMatchObject({ code: 'RATE_LIMITED', coordinates: ['Query.search'] });
    expect(denied.body.errors![0]!.extensions!['retryAfter']).toBeGreaterThanOrEqual(1);
    expect(denied.body.errors![0]!.extensions!['http']).toBeUndefined();
    expect(calls['Query.search'] ?? 0).toBe(0);
    // Nothing was spent: five aliases still fit, then the sixth selection is denied.
    const five = await post(url, { query: `{ ${Array.from({ length: 5 }, (_, i) => `a${i}: search { id }`).join(' ')} }` });
    expect([five.status, calls['Query.search']]).toEqual([200, 5]);
    await settled();
    expect(await remaining(plugin, 'Query-search')).toBe(0);
    expect((await post(url, { query: '{ search { id } }' })).status).toBe(429);
    report(`${name} alias flood: 100 aliases asked, ${calls['Query.search']} resolver calls run over 2 operations (limit 5)`);
  });

  test('fragment flood: a fragment spread many times, nested in inline fragments, counts each selection once', async () => {
    const { calls, url } = await start({});
    const query = `query { ...F ...F ... on Query { ...F ... on Query { ...F } } }
      fragment F on Query { x: search { id } y: search { id } }`;
    for (let i = 0; i < 2; i++) expect((await post(url, { query })).status).toBe(200);
    // Two response keys per operation (the executor merges the rest): 4 calls, then 2 more is past 5.
    expect(calls['Query.search']).toBe(4);
    expect((await post(url, { query })).status).toBe(429);
    expect(calls['Query.search']).toBe(4);
    report(`${name} fragment flood: 3 operations of 4 spreads, ${calls['Query.search']} resolver calls (limit 5)`);
  });

  test('batch flood: 20 operations in one HTTP request, each counted; 5 run', async () => {
    const { calls, url } = await start({}, true);
    const res = await post(
      url,
      Array.from({ length: 20 }, () => ({ query: '{ search { id } }' })),
    );
    const bodies = res.body;
    expect(bodies).toHaveLength(20);
    const admitted = bodies.filter((b) => b.data?.['search']);
    const denied = bodies.filter((b) => b.errors?.[0]?.extensions?.['code'] === 'RATE_LIMITED');
    expect([admitted.length, denied.length, calls['Query.search']]).toEqual([5, 15, 5]);
    report(`${name} batch flood: 20 operations in one request, ${calls['Query.search']} resolver calls (limit 5)`);
  });

  test('nested-list flood: a limited field under a list counts once per item the list asks for', async () => {
    const { calls, url } = await start({ fields: { 'Post.author': { limits: { limit: 50, window: '1m' } } } });
    const denied = await post(url, { query: '{ posts(first: 100) { author { id } } }' });
    expect([denied.status, calls['Query.posts'] ?? 0, calls['Post.author'] ?? 0]).toEqual([429, 0, 0]);
    expect(denied.body.errors![0]!.extensions!['coordinates']).toEqual(['Post.author']);
    expect((await post(url, { query: '{ posts(first: 30) { author { id } } }' })).status).toBe(200);
    expect((await post(url, { query: '{ posts(first: 30) { author { id } } }' })).status).toBe(429);
    expect(calls['Post.author']).toBe(30);
    report(`${name} nested-list flood: 100 + 30 + 30 authors asked, ${calls['Post.author']} resolver calls (limit 50)`);
  });

  test('deep flood: nested unbounded lists are refused above maxCost before any resolver runs', async () => {
    const { calls, url } = await start({ limits: { limit: 100, window: '1m' } });
    let selection = 'id';
    for (let i = 0; i < 12; i++) selection = `friends { ${selection} }`;
    const res = await post(url, { query: `{ me { ${selection} } }` });
    expect(res.status).toBe(400);
    expect(res.body.errors![0]!.extensions).toMatchObject({ code: 'MAX_COST_EXCEEDED', maxCost: 10_000 });
    expect(Object.values(calls).reduce((a, b) => a + b, 0)).toBe(0);
    // A fragment bomb (each fragment spreading the next twice, 2^20 fields) is refused as too large to plan.
    const fragments = Array.from(
      { length: 20 },
      (_, i) => `fragment F${i} on User { a${i}: friends { ...F${i + 1} } b${i}: friends { ...F${i + 1} } }`,
    );
    const bomb = await post(url, { query: `{ me { ...F0 } } ${fragments.join(' ')} fragment F20 on User { id }` });
    expect([bomb.status, bomb.body.errors![0]!.extensions!['code']]).toEqual([400, 'MAX_COST_EXCEEDED']);
    expect(Object.values(calls).reduce((a, b) => a + b, 0)).toBe(0);
    report(`${name} deep flood: depth 12 and a 2^20 fragment bomb refused, 0 resolver calls`);
  });

  test('a client lying about list sizes (first: 1, 1,000 returned) is settled at the actual cost', async () => {
    const { calls, plugin, url } = await start({ limits: { limit: 5000, window: '1m', unit: 'cost' } });
    const res = await post(url, { query: '{ liar(first: 1) { id } }' });
    expect([res.status, (res.body.data!['liar'] as unknown[]).length, calls['Query.liar']]).toEqual([200, 1000, 1]);
    await settled();
    // Estimated 1 (first: 1), settled at 1,000 Post objects.
    expect(await remaining(plugin, '-op', 'cost')).toBe(4000);
    for (let i = 0; i < 4; i++) await post(url, { query: '{ liar(first: 1) { id } }' });
    await settled();
    // The debt is charged past the limit: the client is denied until it is paid off.
    const denied = await post(url, { query: '{ liar(first: 1) { id } }' });
    expect([denied.status, denied.body.errors![0]!.extensions!['coordinates']]).toEqual([429, ['cost']]);
    expect(calls['Query.liar']).toBe(5);
    report(`${name} lying client: estimate 1 per operation, settled at 1000; 5 admitted against 5000 cost a minute, then denied`);
  });

  test('an operation with errors is charged at least its estimate (a non-null error nulls what ran)', async () => {
    const { plugin, url } = await start({ limits: { limit: 1000, window: '1m', unit: 'cost' } });
    const res = await post(url, { query: '{ posts(first: 50) { id } boom }' });
    expect(res.body.data ?? null).toBeNull();
    await settled();
    expect(await remaining(plugin, '-op', 'cost')).toBe(950);
  });

  test('the bound: operations admitted together before the first settle overshoot by their excess, no more; those racing the settles are denied', async () => {
    const LIMIT = 200;
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const calls: Calls = {};
    const plugin: Plugin = closing(make({ redis, prefix: uniquePrefix('gql'), limits: { limit: LIMIT, window: '1m', unit: 'cost' } }));
    const { url } = closing(await serve([plugin], calls, { hold }));
    // 60 operations estimating 10 each (first: 10) and resolving 1,000: every resolver waits until all 60 were decided.
    let denied = 0;
    const ask = () => post(url, { query: '{ liar(first: 10) { id } }' });
    const first = Array.from({ length: 60 }, () => ask().then((r) => (r.status === 429 && denied++, r)));
    while ((calls['Query.liar'] ?? 0) + denied < 60) await new Promise((r) => setTimeout(r, 5));
    const admittedTogether = calls['Query.liar'] ?? 0;
    release();
    // 60 more race the first wave's settles.
    const second = Array.from({ length: 60 }, ask);
    const answers = await Promise.all([...first, ...second]);
    await settled();
    const admitted = answers.filter((r) => r.status === 200).length;
    expect(admittedTogether).toBe(LIMIT / 10);
    expect(admitted).toBe(admittedTogether);
    // What is counted is the admitted operations' actual cost: 20 x 1,000 against 200 a minute, a debt of
    // 19,800 paid off at 200 a minute (99 minutes), no more.
    const peek = await plugin.limiter!.peek('-op:ip:127.0.0.1', { cost: 1 });
    const owedMinutes = peek.retryAfterMs / 60_000;
    expect(owedMinutes).toBeGreaterThan(98);
    expect(owedMinutes).toBeLessThanOrEqual(101);
    report(
      `${name} budget bound: 120 operations estimating 10 and using 1000 against ${LIMIT} cost a minute: ${admittedTogether} admitted together before the first settle (estimates ${admittedTogether * 10}), ${admitted} in all; counted ${admitted * 1000}: denied for ${owedMinutes.toFixed(1)} minutes`,
    );
  });
});
