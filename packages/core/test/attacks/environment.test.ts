import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import { createLimiter, type AlgorithmName, type Limiter } from '@floodgate/core';
import { TEST_DEADLINE, closeClients, connect, spawnRedis, uniquePrefix, type RedisProcess } from '@floodgate/testing';

/*
 * docs/security.md, "Eviction", and docs/production.md: what a Redis must be for the limits
 * to hold (no eviction of Floodgate's keys) and the least a limiter needs from it (its ACL).
 */
afterAll(closeClients);

const ALGORITHMS: AlgorithmName[] = ['sliding-window', 'fixed-window', 'sliding-log', 'token-bucket'];

describe('maxmemory-policy', () => {
  let servers: RedisProcess[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    servers = [];
  });

  test.each(['allkeys-lru', 'volatile-ttl'])('%s: one warning through the logger when a client is first used', async (policy) => {
    const server = await spawnRedis(['--maxmemory', '100mb', '--maxmemory-policy', policy]);
    servers.push(server);
    const warnings: string[] = [];
    const logger = { warn: (m: string) => void warnings.push(m) };
    const client = connect(server.url);
    // The test's deadline: a first connection on a loaded machine can take longer than the default 250 ms,
    // and a check past it warns about the failure policy beside the warning this is about.
    const limiterNamed = (name: string): Limiter =>
      createLimiter({ redis: client, prefix: uniquePrefix('ev'), name, limits: { limit: 5, window: '1m' }, logger, ...TEST_DEADLINE });
    const [a, b] = [limiterNamed('a'), limiterNamed('b')];
    for (let i = 0; i < 3; i++) await Promise.all([a.check('ip:1.2.3.4'), b.check('ip:1.2.3.4')]);
    // One more round trip on the same connection: the eviction check's INFO, sent before it, has been answered.
    await client.ping();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`maxmemory-policy is '${policy}'`);
    expect(warnings[0]).toContain('noeviction');
  });

  test('noeviction: no warning', async () => {
    const server = await spawnRedis(['--maxmemory', '100mb', '--maxmemory-policy', 'noeviction']);
    servers.push(server);
    const warnings: string[] = [];
    const limiter = createLimiter({
      redis: connect(server.url),
      prefix: uniquePrefix('ev'),
      limits: { limit: 5, window: '1m' },
      logger: { warn: (m) => void warnings.push(m) },
    });
    await limiter.check('ip:1.2.3.4');
    await new Promise((r) => setTimeout(r, 50));
    expect(warnings).toEqual([]);
  });
});

/** The ACL docs/production.md gives for a limiter, read from the page: its commands, on the limiter's prefix only. */
const LIMITER_ACL = (
  /^ACL SETUSER limiter .*$/m.exec(readFileSync(join(__dirname, '..', '..', '..', '..', 'docs', 'production.md'), 'utf8'))?.[0] ?? ''
)
  .split(' ')
  .filter((w) => /^\+[a-z]+$/.test(w));

test('the ACL is read from docs/production.md', () => {
  expect(LIMITER_ACL).toEqual(expect.arrayContaining(['+evalsha', '+eval', '+time', '+pttl']));
});

test("every command core's scripts call is in docs/production.md's ACL section (the line, or the extras it names)", () => {
  const page = readFileSync(join(__dirname, '..', '..', '..', '..', 'docs', 'production.md'), 'utf8');
  const section = page.slice(
    page.indexOf('## The ACL a limiter needs'),
    page.indexOf('\n## ', page.indexOf('## The ACL a limiter needs') + 5),
  );
  const documented = new Set([...section.matchAll(/\+([a-z]+)/g)].map((m) => m[1]!));
  const src = join(__dirname, '..', '..', 'src');
  const called = new Set<string>();
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) visit(join(dir, entry.name));
      else if (entry.name.endsWith('.ts'))
        for (const m of readFileSync(join(dir, entry.name), 'utf8').matchAll(/redis\.call\('([A-Za-z]+)'/g))
          called.add(m[1]!.toLowerCase());
    }
  };
  visit(src);
  expect(called.size).toBeGreaterThan(10);
  expect([...called].filter((c) => !documented.has(c)).sort()).toEqual([]);
});

describe('the ACL a limiter needs', () => {
  let server: RedisProcess;
  beforeAll(async () => {
    server = await spawnRedis();
    const admin = new Redis(server.url);
    await admin.call('ACL', 'SETUSER', 'limiter', 'on', '>s3cret', '~fg-acl:*', ...LIMITER_ACL);
    await admin.call('ACL', 'SETUSER', 'no-time', 'on', '>s3cret', '~fg-acl:*', ...LIMITER_ACL.filter((c) => c !== '+time'));
    await admin.quit();
  });
  afterAll(() => server.stop());

  test.each(ALGORITHMS)('%s: check, peek, block, unblock and reset with exactly that ACL', async (algorithm) => {
    const client = connect(`redis://limiter:s3cret@127.0.0.1:${server.port}`);
    const limiter = createLimiter({
      redis: client,
      prefix: 'fg-acl',
      name: algorithm,
      algorithm,
      failure: 'closed',
      limits: [
        { limit: 2, window: '1m' },
        { limit: 5, window: '1h', for: 'user' },
      ],
    });
    expect(await limiter.check(['ip:1.2.3.4', 'user:7'])).toMatchObject({ allowed: true, source: 'redis' });
    expect(await limiter.peek('ip:1.2.3.4')).toMatchObject({ allowed: true, source: 'redis', remaining: 1 });
    await limiter.block('user:7', { duration: '1m', reason: 'acl test' });
    expect(await limiter.check(['ip:1.2.3.4', 'user:7'])).toMatchObject({ allowed: false, reason: 'blocked' });
    await limiter.unblock('user:7');
    await limiter.reset(['ip:1.2.3.4', 'user:7']);
    expect(await limiter.check('ip:1.2.3.4')).toMatchObject({ allowed: true, source: 'redis', remaining: 1 });
    await limiter.close();
  });

  test('overrides (set, list, delete, and the refresh a second limiter reads them by) with exactly that ACL', async () => {
    const make = (): Limiter =>
      createLimiter({
        redis: connect(`redis://limiter:s3cret@127.0.0.1:${server.port}`),
        prefix: 'fg-acl',
        name: 'overrides',
        failure: 'closed',
        limits: { free: { limit: 2, window: '1m' }, pro: { limit: 9, window: '1m' } },
        overrides: { refreshMs: 100 },
      });
    const [setter, reader] = [make(), make()];
    expect(await reader.check('user:1')).toMatchObject({ source: 'redis', limit: 2 });
    await setter.overrides.set('user:1', { plan: 'pro' }, { ttl: '1h' });
    await setter.overrides.set('user:2', { limits: { limit: 4, window: '1m' } });
    expect((await setter.overrides.list()).map((o) => o.identifier)).toEqual(['user:1', 'user:2']);
    await new Promise((r) => setTimeout(r, 300));
    expect(await reader.check('user:1')).toMatchObject({ source: 'redis', limit: 9 });
    expect(await setter.overrides.delete('user:2')).toBe(true);
    await Promise.all([setter.close(), reader.close()]);
  });

  test('one command short (no TIME): every check fails, so the ACL above is the least that works', async () => {
    const client = connect(`redis://no-time:s3cret@127.0.0.1:${server.port}`);
    const limiter = createLimiter({
      redis: client,
      prefix: 'fg-acl',
      name: 'short',
      failure: 'closed',
      limits: { limit: 2, window: '1m' },
      logger: { warn: () => undefined },
    });
    const decision = await limiter.check('ip:1.2.3.4');
    expect(decision).toMatchObject({ allowed: false, source: 'fallback', reason: 'store-unavailable' });
    expect(String((decision.error?.cause as Error | undefined)?.message)).toMatch(/NOPERM|permission|can't run this command/i);
    await limiter.close();
  });
});
