import { createLimiter } from '../../src/engine/limiter';
import { ConfigError } from '../../src/kernel/errors';
import type { LimiterOptions } from '../../src/engine/options';

function configError(options: unknown): ConfigError {
  try {
    createLimiter(options as LimiterOptions).close();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).code).toBe('ERR_FLOODGATE_CONFIG');
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

const ok = { limits: { limit: 1, window: '1s' } };

describe('configuration errors name the option and the bad value', () => {
  test.each([
    [{ limits: { limit: 0, window: '1s' } }, 'limits[0].limit', /got 0/],
    [{ limits: { limit: -3, window: '1s' } }, 'limits[0].limit', /got -3/],
    [{ limits: { limit: 1.5, window: '1s' } }, 'limits[0].limit', /got 1.5/],
    [
      {
        limits: [
          { limit: 1, window: '1s' },
          { limit: '10', window: '1s' },
        ],
      },
      'limits[1].limit',
      /"10"/,
    ],
    [{ limits: { limit: 1, window: 0 } }, 'limits[0].window', /got 0/],
    [{ limits: { limit: 1, window: '1 minute' } }, 'limits[0].window', /"1 minute"/],
    [{ limits: { limit: 1, window: '1.5s' } }, 'limits[0].window', /"1.5s"/],
    [{ limits: { limit: 1, window: 12.5 } }, 'limits[0].window', /12.5/],
    [{ limits: { limit: 1, window: Infinity } }, 'limits[0].window', /Infinity/],
    [{ limits: [] }, 'limits', /at least one rule/],
    [{}, 'limits', /at least one rule/],
    [{ ...ok, algorithm: 'leaky-bucket' }, 'algorithm', /"leaky-bucket"/],
    [{ ...ok, failure: 'ignore' }, 'failure', /'open', 'closed', 'local'.*"ignore"/],
    [{ ...ok, prefix: 'a b' }, 'prefix', /"a b"/],
    [{ ...ok, prefix: 'x{y}' }, 'prefix', /x\{y\}/],
    // The peers' own prefixes end in their separator: the message names the prefix that gives the same keys.
    [{ ...ok, prefix: 'my-namespace:' }, 'prefix', /"my-namespace:".*prefix 'my-namespace' gives keys that start 'my-namespace:'/],
    [{ ...ok, prefix: 'rl:' }, 'prefix', /prefix 'rl' gives keys that start 'rl:'/],
    [{ ...ok, prefix: 'app:eu:' }, 'prefix', /prefix 'app.eu' gives keys that start 'app.eu:'/],
    [{ ...ok, name: 'bad!name' }, 'name', /"bad!name"/],
    [{ ...ok, name: 'n'.repeat(49) }, 'name', /\{1,48\}/],
    [{ ...ok, timeoutMs: 0 }, 'timeoutMs', /got 0/],
    [{ ...ok, mode: 'dry-run' }, 'mode', /"dry-run"/],
    [{ ...ok, redis: {} }, 'redis', /ioredis/],
    [{ limits: { limit: 1, window: '1s', for: 'a:b' } }, 'limits[0].for', /"a:b"/],
  ])('%j -> %s', (options, option, message) => {
    const err = configError(options);
    expect(err.option).toBe(option);
    expect(err.message).toContain(`\`${option}\``);
    expect(err.message).toMatch(message);
  });

  test.each([
    ['windowMs', /limits: \[\{ limit, window \}\]/],
    ['max', /limits/],
    ['points', /limits/],
    ['duration', /limits/],
    ['timeWindow', /limits/],
    ['keyGenerator', /identify/],
    ['storeClient', /`redis`/],
    ['keyPrefix', /`prefix`/],
    ['insuranceLimiter', /failure: 'local'/],
    ['allowList', /`allow: \[\.\.\.\]`/],
    ['blacklist', /`deny: \[\.\.\.\]`/],
  ])('a peer option name (%s) says what Floodgate calls it', (key, hint) => {
    const err = configError({ ...ok, [key]: 1 });
    expect(err.option).toBe(key);
    expect(err.message).toMatch(hint);
  });

  test('a misspelt option suggests the closest name', () => {
    expect(configError({ ...ok, timeotMs: 100 }).message).toMatch(/did you mean `timeoutMs`/);
    expect(configError({ ...ok, algoritm: 'fixed-window' }).message).toMatch(/did you mean `algorithm`/);
  });

  test('a peer name inside a rule says what Floodgate calls it', () => {
    const err = configError({ limits: { max: 5, windowMs: 1000 } });
    expect(err.option).toBe('limits[0].max');
    expect(err.message).toMatch(/`limit`/);
  });

  test('two limiters with one prefix and name but different rules is an error; the same rules are fine', () => {
    const a = createLimiter({ name: 'dup', prefix: 'opt-test', limits: { limit: 5, window: '1s' } });
    const b = createLimiter({ name: 'dup', prefix: 'opt-test', limits: { limit: 5, window: '1s' } });
    const err = configError({ name: 'dup', prefix: 'opt-test', limits: { limit: 6, window: '1s' } });
    expect(err.option).toBe('name');
    void a.close();
    void b.close();
    // Once both are closed, the name is free again.
    createLimiter({ name: 'dup', prefix: 'opt-test', limits: { limit: 6, window: '1s' } }).close();
  });
});

describe('call arguments', () => {
  const limiter = createLimiter({ prefix: 'opt-args', algorithm: 'fixed-window', limits: { limit: 5, window: '1s' } });
  afterAll(() => limiter.close());

  test.each([[-1], [1.5], [NaN], ['1']])('cost %p is rejected', async (cost) => {
    await expect(limiter.check('ip:1', { cost: cost as number })).rejects.toThrow(/cost must be a non-negative integer/);
  });

  test.each([[[]], [''], [[42]], [['a', '']]])('identifiers %p are rejected', async (ids) => {
    await expect(limiter.check(ids as string[])).rejects.toThrow(/identifier/);
  });

  test('block needs a finite duration', async () => {
    await expect(limiter.block('ip:1', { duration: Infinity })).rejects.toThrow(/`duration`/);
    await expect(limiter.block('ip:1', {} as { duration: number })).rejects.toThrow(/`duration`/);
  });
});
