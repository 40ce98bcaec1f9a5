import { checkOptions, inheritedNames, optionNames, type OptionTable } from '../../src/config/option-table';
import { LIMITER_OPTIONS, LIMITER_OPTION_KEYS, resolveOptions } from '../../src/engine/options';
import { HTTP_OPTIONS, HTTP_OPTION_KEYS, INHERITED_OPTION_KEYS } from '../../src/http/options';
import { CONCURRENCY_OPTION_KEYS } from '../../src/engine/concurrency/options';
import { CONCURRENCY_HTTP_OPTION_KEYS } from '../../src/http/http-concurrency';
import { SLOW_DOWN_OPTION_KEYS } from '../../src/http/http-slow-down';
import { ConfigError } from '../../src/kernel/errors';

/*
 * Each option set is declared once: its interface, and a table the compiler holds to it. The key lists,
 * what a route inherits and what only Redis reads all come from the tables; these are the published lists
 * (exported from @floodgate/core/adapter), which must not change by accident.
 */

test('the published key lists, in declaration order', () => {
  expect(LIMITER_OPTION_KEYS).toEqual([
    'redis',
    'name',
    'prefix',
    'algorithm',
    'limits',
    'failure',
    'timeoutMs',
    'mode',
    'penalty',
    'refunds',
    'lockout',
    'allow',
    'deny',
    'identifierKinds',
    'onEvent',
    'events',
    'logger',
    'clock',
    'blockCache',
    'cluster',
    'memory',
    'overrides',
  ]);
  expect(HTTP_OPTION_KEYS).toEqual([
    'limiter',
    'identify',
    'user',
    'skip',
    'cost',
    'plan',
    'settle',
    'headers',
    'statusCode',
    'denyStatusCode',
    'message',
    'ipv6Subnet',
    'unidentified',
    'skipSuccessfulRequests',
    'skipFailedRequests',
    'requestWasSuccessful',
    'warnings',
    'omitHeaders',
  ]);
  expect(SLOW_DOWN_OPTION_KEYS).toEqual(['delayAfter', 'delayMs', 'maxDelayMs']);
  expect(CONCURRENCY_OPTION_KEYS).toEqual([
    'redis',
    'name',
    'prefix',
    'failure',
    'timeoutMs',
    'onEvent',
    'logger',
    'clock',
    'cluster',
    'memory',
    'max',
    'leaseMs',
  ]);
  expect(CONCURRENCY_HTTP_OPTION_KEYS).toEqual([
    'limiter',
    'identify',
    'user',
    'skip',
    'statusCode',
    'message',
    'ipv6Subnet',
    'unidentified',
    'warnings',
  ]);
  expect(Object.isFrozen(LIMITER_OPTION_KEYS)).toBe(true);
});

test('what a route inherits: where and how state lives and how answers look, never which requests count', () => {
  expect([...INHERITED_OPTION_KEYS].sort()).toEqual(
    [
      'redis',
      'prefix',
      'algorithm',
      'penalty',
      'blockCache',
      'cluster',
      'memory',
      'failure',
      'timeoutMs',
      'mode',
      'onEvent',
      'events',
      'logger',
      'clock',
      'headers',
      'statusCode',
      'denyStatusCode',
      'message',
      'ipv6Subnet',
      'warnings',
      'omitHeaders',
      'user',
    ].sort(),
  );
  for (const own of ['limits', 'name', 'limiter', 'identify', 'skip', 'cost', 'plan', 'lockout', 'allow', 'deny', 'refunds']) {
    expect(INHERITED_OPTION_KEYS).not.toContain(own);
  }
});

test('the options only Redis reads are a ConfigError without a client, each named', () => {
  const redisOnly = LIMITER_OPTION_KEYS.filter((key) => LIMITER_OPTIONS[key].redisOnly === true);
  expect(redisOnly).toEqual(['failure', 'timeoutMs', 'cluster']);
  const values: Record<string, unknown> = { failure: 'closed', timeoutMs: 100, cluster: { colocate: true } };
  for (const option of redisOnly) {
    expect(() => resolveOptions({ limits: { limit: 1, window: '1m' }, [option]: values[option] })).toThrow(
      expect.objectContaining({ option }) as ConfigError,
    );
  }
});

test("every table entry's check names its option and shows the value", () => {
  const bad: Record<string, unknown> = {
    name: 'has space',
    algorithm: 'leaky',
    failure: 'maybe',
    mode: 'loud',
    penalty: 'yes',
    refunds: 1,
    onEvent: 'log',
    logger: {},
    clock: 5,
  };
  for (const [option, value] of Object.entries(bad)) {
    expect(() => checkOptions(LIMITER_OPTIONS, { [option]: value })).toThrow(ConfigError);
    expect(() => checkOptions(LIMITER_OPTIONS, { [option]: value })).toThrow(new RegExp(`\`${option}\``));
  }
  expect(() => checkOptions(HTTP_OPTIONS, { cost: -1 })).toThrow(
    /`cost` must be a non-negative integer, a cost per unit .* or a function; got -1/,
  );
  expect(() => checkOptions(HTTP_OPTIONS, { cost: { tokens: 1.5 } })).toThrow(/`cost.tokens` must be a non-negative integer; got 1.5/);
  expect(() => checkOptions(HTTP_OPTIONS, { settle: 5 })).toThrow(/`settle` must be a function; got 5/);
  expect(() => checkOptions(HTTP_OPTIONS, { statusCode: 200 })).toThrow(/`statusCode` must be an integer HTTP error status/);
  expect(() => checkOptions(HTTP_OPTIONS, { unidentified: 'drop' })).toThrow(/`unidentified` must be one of 'shared', 'deny', 'allow'/);
  // Undefined is "not given": never checked.
  expect(() => checkOptions(LIMITER_OPTIONS, { penalty: undefined })).not.toThrow();
});

test('optionNames and inheritedNames read a table in declaration order', () => {
  interface Example {
    a?: number;
    b: string;
    c?: boolean;
  }
  const table: OptionTable<Example> = { a: { inherited: true }, b: {}, c: { inherited: true } };
  expect(optionNames(table)).toEqual(['a', 'b', 'c']);
  expect(inheritedNames(table)).toEqual(['a', 'c']);
});
