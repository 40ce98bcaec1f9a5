import type Redis from 'ioredis';
import { ConfigError, createLimiter, type LimiterEvent, type LimiterOptions } from '@floodgate/core';
import { createHttpLimiter } from '@floodgate/core/adapter';
import { closeClients, commandStats, connect, startRedis, uniquePrefix, type StartedRedis, TEST_DEADLINE } from '@floodgate/testing';

/*
 * Allow and deny lists (issue 14, item 4): compiled at construction, matched in process with no store call,
 * deny wins over allow, swapped at run time by setLists(). The adapters' side (403, no headers, the client
 * address and trust proxy) is in @floodgate/testing's policyConformance, over real sockets.
 */

let server: StartedRedis;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis();
  redis = connect(server.url);
});
afterAll(async () => {
  await closeClients();
  await server.stop();
});

const limits = { limit: 1, window: '1m' } as const;
const make = (options: Partial<LimiterOptions> = {}) =>
  createLimiter({ ...TEST_DEADLINE, redis, prefix: uniquePrefix('ls'), limits, ...options });
const scripts = async (): Promise<number> => {
  const stats = await commandStats(redis);
  return (stats.evalsha ?? 0) + (stats.eval ?? 0);
};

describe('construction', () => {
  test.each([
    ['allow', ['10.0.0.0/8', '10.0.0.0/33'], 'allow[1]'],
    ['allow', ['300.1.2.3'], 'allow[0]'],
    ['deny', ['1.2.3'], 'deny[0]'],
    ['deny', ['2001:db8::/129'], 'deny[0]'],
    ['deny', ['2001:db8:::1'], 'deny[0]'],
    ['deny', ['10.0.0.0/-1'], 'deny[0]'],
    ['deny', ['10.0.0.0/8x'], 'deny[0]'],
    ['allow', ['ip:not-an-ip'], 'allow[0]'],
    ['allow', ['user:admin', ''], 'allow[1]'],
    ['allow', [' 10.0.0.1'], 'allow[0]'],
    ['deny', [42], 'deny[0]'],
    ['deny', '10.0.0.0/8', 'deny'],
    ['allow', { ip: '10.0.0.1' }, 'allow'],
  ])('%s: %j is a ConfigError naming %s', (option, value, named) => {
    const attempt = () => make({ [option]: value } as Partial<LimiterOptions>);
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(expect.objectContaining({ option: named }));
  });

  test('valid entries of every kind compile', () => {
    const l = make({
      allow: ['10.0.0.0/8', '192.0.2.1', '2001:db8::/32', '[2001:db8::1]', '::ffff:198.51.100.0/120', 'ip:203.0.113.5', 'user:admin'],
      deny: ['0.0.0.0/0', 'abc:def', 'key:a.b/c'],
      identifierKinds: ['abc', 'key'],
    });
    expect(l.name).toBe('default');
    return l.close();
  });
});

describe('matching, on Redis, with no store call', () => {
  test('a denied identifier: reason listed, source list, never sent to Redis', async () => {
    const l = make({ deny: ['203.0.113.0/24', 'user:mallory'] });
    await l.check('ip:192.0.2.1'); // loads the script
    const before = await scripts();
    for (let k = 0; k < 5; k++) {
      expect(await l.check('ip:203.0.113.77')).toMatchObject({
        allowed: false,
        reason: 'listed',
        source: 'list',
        identifier: 'ip:203.0.113.77',
        states: [],
      });
    }
    expect(await l.check(['ip:192.0.2.9', 'user:mallory'])).toMatchObject({ allowed: false, reason: 'listed', identifier: 'user:mallory' });
    expect(await scripts()).toBe(before);
    // Not listed: the rules apply as ever.
    expect((await l.check('ip:192.0.2.9')).allowed).toBe(true);
    expect((await l.check('ip:192.0.2.9')).reason).toBe('limit');
    await l.close();
  });

  test('an allowed identifier is never limited and consumes nothing', async () => {
    const prefix = uniquePrefix('ls');
    const l = createLimiter({ ...TEST_DEADLINE, redis, prefix, limits, allow: ['user:admin', '10.0.0.0/8'] });
    const plain = createLimiter({ ...TEST_DEADLINE, redis, prefix, name: 'default', limits, blockCache: false });
    for (let k = 0; k < 4; k++) {
      expect(await l.check(['ip:192.0.2.1', 'user:admin'])).toMatchObject({ allowed: true, source: 'list', identifier: 'user:admin' });
      expect(await l.check('ip:10.200.3.4')).toMatchObject({ allowed: true, source: 'list', remaining: Infinity });
    }
    // Nothing was counted for either (a limiter without the lists reads the same keys).
    await plain.close();
    const reader = createLimiter({ ...TEST_DEADLINE, redis, prefix, limits, blockCache: false });
    expect((await reader.peek('ip:192.0.2.1')).remaining).toBe(1);
    expect((await reader.peek('ip:10.200.3.4')).remaining).toBe(1);
    await reader.close();
    await l.close();
  });

  test('deny wins over allow, and over an allow-listed identifier of the same check', async () => {
    const l = make({ allow: ['10.0.0.0/8', 'user:admin'], deny: ['10.9.0.0/16'] });
    expect((await l.check('ip:10.1.0.1')).allowed).toBe(true);
    expect(await l.check('ip:10.9.8.7')).toMatchObject({ allowed: false, reason: 'listed' });
    expect(await l.check(['ip:10.9.8.7', 'user:admin'])).toMatchObject({ allowed: false, reason: 'listed' });
    await l.close();
  });

  test('the allow list wins over a block; the deny list over everything', async () => {
    const l = make({ allow: ['user:ops'] });
    await l.block('user:ops', { duration: '1h' });
    expect(await l.check('user:ops')).toMatchObject({ allowed: true, source: 'list' });
    l.setLists({ deny: ['user:ops'] });
    expect(await l.check('user:ops')).toMatchObject({ allowed: false, reason: 'listed' });
    await l.close();
  });

  test('identifier entries match exactly; IP entries only addresses', async () => {
    const l = make({ deny: ['user:admin', '192.0.2.1'] });
    expect((await l.check('user:admin2')).reason).not.toBe('listed');
    expect((await l.check('user:Admin')).reason).not.toBe('listed');
    // `user:192.0.2.1` is a user id, not the address.
    expect((await l.check('user:192.0.2.1')).reason).not.toBe('listed');
    expect((await l.check('ip:192.0.2.1')).reason).toBe('listed');
    expect((await l.check('ip:192.0.2.10')).reason).not.toBe('listed');
    await l.close();
  });

  test('IPv4-mapped IPv6 matches the IPv4 rule, and an IPv4-mapped rule the IPv4 client', async () => {
    const l = make({ deny: ['198.51.100.0/24', '::ffff:203.0.113.0/120'] });
    expect((await l.check('ip:::ffff:198.51.100.7')).reason).toBe('listed');
    expect((await l.check('ip:203.0.113.9')).reason).toBe('listed');
    expect((await l.check('ip:203.0.114.9')).reason).not.toBe('listed');
    await l.close();
  });

  test('IPv6: a grouped identifier (ip:<net>/56) matches a range that holds the whole group, not one address inside it', async () => {
    const l = make({ deny: ['2001:db8::/32', '2001:db9::5'] });
    expect((await l.check('ip:2001:db8:1:2::/56')).reason).toBe('listed');
    expect((await l.check('ip:2001:db8:1:2::99')).reason).toBe('listed');
    expect((await l.check('ip:2001:db9::/56')).reason).not.toBe('listed');
    expect((await l.check('ip:2001:db9::5')).reason).toBe('listed');
    // Written another way, the same address.
    expect((await l.check('ip:2001:0db9:0:0::0005')).reason).toBe('listed');
    await l.close();
  });

  test('0.0.0.0/0 and ::/0 hold every address of their family', async () => {
    const l = make({ deny: ['0.0.0.0/0'] });
    expect((await l.check('ip:255.255.255.255')).reason).toBe('listed');
    expect((await l.check('ip:2001:db8::1')).reason).not.toBe('listed');
    l.setLists({ deny: ['::/0'] });
    expect((await l.check('ip:2001:db8::1')).reason).toBe('listed');
    expect((await l.check('ip:192.0.2.1')).reason).not.toBe('listed');
    await l.close();
  });

  test('peek and a plan see the lists too', async () => {
    const l = make({ limits: { free: [limits], pro: [{ limit: 5, window: '1m' }] }, deny: ['user:x'] });
    expect(await l.peek('user:x')).toMatchObject({ allowed: false, reason: 'listed' });
    expect(await l.check('user:x', { plan: 'pro' })).toMatchObject({ allowed: false, reason: 'listed' });
    await l.close();
  });

  test('a list decision refunds nothing', async () => {
    const l = make({ allow: ['user:a'], refunds: true });
    expect(await l.refund(await l.check('user:a'))).toBe(false);
    await l.close();
  });
});

describe('setLists', () => {
  test('swaps the lists at run time; a list left out stays', async () => {
    const l = make({ allow: ['user:a'] });
    expect((await l.check('user:b')).source).toBe('redis');
    l.setLists({ deny: ['user:b'] });
    expect((await l.check('user:b')).reason).toBe('listed');
    expect((await l.check('user:a')).source).toBe('list');
    l.setLists({ allow: [], deny: [] });
    expect((await l.check('user:a')).source).toBe('redis');
    expect((await l.check('user:b')).source).toBe('redis');
    await l.close();
  });

  test('validated as at construction: a malformed entry throws and changes nothing', async () => {
    const l = make({ deny: ['user:b'] });
    expect(() => l.setLists({ deny: ['user:c', '10.0.0.0/40'] })).toThrow(expect.objectContaining({ option: 'deny[1]' }));
    expect(() => l.setLists({ allow: ['10.0.0.1'], deny: ['999.0.0.1'] })).toThrow(ConfigError);
    expect(() => l.setLists({ allowed: [] } as never)).toThrow(expect.objectContaining({ option: 'allowed' }));
    expect(() => l.setLists(null as never)).toThrow(expect.objectContaining({ option: 'lists' }));
    expect(() => l.setLists(['user:a'] as never)).toThrow(expect.objectContaining({ option: 'lists' }));
    expect((await l.check('user:b')).reason).toBe('listed');
    expect((await l.check('user:c')).source).toBe('redis');
    // The allow list of the rejected call was not applied either.
    expect((await l.check('ip:10.0.0.1')).source).toBe('redis');
    await l.close();
  });

  test('the input arrays are copied: changing them later changes nothing', async () => {
    const deny = ['user:b'];
    const l = make({ deny });
    deny.push('user:c');
    deny[0] = 'user:z';
    expect((await l.check('user:b')).reason).toBe('listed');
    expect((await l.check('user:c')).source).toBe('redis');
    await l.close();
  });
});

describe('events', () => {
  test("a denial is outcome 'listed', an allowance outcome 'allowed', both from source 'list'", async () => {
    const events: LimiterEvent[] = [];
    const l = make({ allow: ['user:a'], deny: ['user:d'], onEvent: (e) => void events.push(e), events: { identifiers: true } });
    await l.check('user:a');
    await l.check('user:d');
    expect(events).toEqual([
      expect.objectContaining({
        type: 'decision',
        outcome: 'allowed',
        source: 'list',
        kind: 'user',
        identifier: 'user:a',
        rule: undefined,
      }),
      expect.objectContaining({ type: 'decision', outcome: 'listed', source: 'list', kind: 'user', identifier: 'user:d', shadow: false }),
    ]);
    await l.close();
  });

  test("shadow mode admits a denied client and reports it: outcome 'listed', shadow true", async () => {
    const events: LimiterEvent[] = [];
    const l = make({ mode: 'shadow', deny: ['user:d'], onEvent: (e) => void events.push(e) });
    expect(await l.check('user:d')).toMatchObject({ allowed: true, shadowDenied: true, source: 'list' });
    expect(events.map((e) => e.type)).toEqual(['shadow-deny', 'decision']);
    expect(events[1]).toMatchObject({ outcome: 'listed', shadow: true });
    await l.close();
  });
});

test('the in-memory store: the same answers', async () => {
  const l = createLimiter({ prefix: uniquePrefix('ls'), limits, allow: ['user:a'], deny: ['10.0.0.0/8'] });
  expect(await l.check('user:a')).toMatchObject({ allowed: true, source: 'list' });
  expect(await l.check('ip:10.1.1.1')).toMatchObject({ allowed: false, reason: 'listed', source: 'list' });
  expect((await l.check('ip:192.0.2.1')).source).toBe('memory');
  await l.close();
});

describe('the HTTP layer', () => {
  interface Req {
    tenant?: string;
  }

  test('a deny-listed address is refused before skip, identify, cost or plan run, with one decision event', async () => {
    const calls: string[] = [];
    const events: LimiterEvent[] = [];
    const http = createHttpLimiter<Req>({
      redis,
      prefix: uniquePrefix('ls'),
      limits: { free: [limits], pro: [limits] },
      deny: ['198.51.100.0/24', 'tenant:evil'],
      identifierKinds: ['tenant'],
      onEvent: (e) => void events.push(e),
      skip: () => (calls.push('skip'), false),
      identify: (req, defaults) => (calls.push('identify'), req.tenant ? [...defaults, `tenant:${req.tenant}`] : defaults),
      cost: () => (calls.push('cost'), 1),
      plan: () => (calls.push('plan'), undefined),
    });
    const refused = await http.decide({}, '::ffff:198.51.100.20');
    expect(refused).toMatchObject({ action: 'deny', status: 403, set: [], append: [], decision: { reason: 'listed', source: 'list' } });
    expect(calls).toEqual([]);
    expect(events.filter((e) => e.type === 'decision')).toHaveLength(1);
    // A port, brackets or quotes a proxy added are not part of the address.
    for (const ip of ['198.51.100.21:5555', '"198.51.100.22"', '[::ffff:198.51.100.23]:80']) {
      expect(await http.decide({}, ip)).toMatchObject({ action: 'deny', status: 403 });
    }
    expect(calls).toEqual([]);
    // An identifier only identify() gives is matched with the check, after the functions ran.
    const tenant = await http.decide({ tenant: 'evil' }, '192.0.2.1');
    expect(tenant).toMatchObject({ action: 'deny', status: 403, decision: { identifier: 'tenant:evil' } });
    expect(calls).toEqual(['skip', 'identify', 'cost', 'plan']);
    await http.limiter.close();
  });

  test('an allow-listed client: next, no headers, the list decision on the request', async () => {
    const http = createHttpLimiter<Req>({ redis, prefix: uniquePrefix('ls'), limits, allow: ['2001:db8::/32'] });
    for (let k = 0; k < 3; k++) {
      const outcome = await http.decide({}, '[2001:db8::1]:443');
      expect(outcome).toMatchObject({ action: 'next', set: [], append: [], decision: { source: 'list', allowed: true } });
    }
    await http.limiter.close();
  });
});

describe('attacks', () => {
  test('a polluted Object.prototype never puts anyone on a list', async () => {
    const proto = Object.prototype as { deny?: unknown; allow?: unknown };
    proto.deny = ['0.0.0.0/0'];
    proto.allow = ['user:attacker'];
    try {
      const l = make();
      expect((await l.check('ip:192.0.2.1')).source).toBe('redis');
      l.setLists({});
      expect((await l.check('user:attacker')).source).toBe('redis');
      await l.close();
    } finally {
      delete proto.deny;
      delete proto.allow;
    }
  });

  // How fast a large list compiles and matches is the benchmark's (npm run bench:policies), not a timed test:
  // a bound in ms here failed on a loaded machine and told nothing on an idle one.
  test('a large list compiles and matches exactly: 100,000 entries', async () => {
    const deny = Array.from({ length: 100_000 }, (_, k) => (k % 2 ? `10.${(k >> 16) & 255}.${(k >> 8) & 255}.${k & 255}` : `user:u${k}`));
    const l = make({ deny });
    for (let k = 0; k < 1_000; k++) expect((await l.peek(['ip:192.0.2.1', `user:x${k}`])).reason).not.toBe('listed');
    expect((await l.check('ip:10.0.0.1')).reason).toBe('listed');
    expect((await l.check('ip:10.1.134.159')).reason).toBe('listed');
    expect((await l.check('user:u2')).reason).toBe('listed');
    expect((await l.check('user:u99998')).reason).toBe('listed');
    expect((await l.check('user:u3')).reason).not.toBe('listed');
    await l.close();
  });
});
