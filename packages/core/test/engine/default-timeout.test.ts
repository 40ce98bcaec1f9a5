import { ConfigError } from '../../src/kernel/errors';
import { DEFAULT_TIMEOUT_MS, defaultTimeoutMs } from '../../src/engine/options/default-timeout';
import { resolveOptions } from '../../src/engine/options';
import { scripted, uniquePrefix } from '@floodgate/testing';

/*
 * FLOODGATE_TIMEOUT_MS (docs/testing.md): the deadline of every limiter that sets no `timeoutMs`, for a test
 * run on a busy machine. What it changes is shown on a scripted store and a virtual clock: a store that
 * answers in 400 ms is the failure policy's answer at the default 250 ms, and Redis's under a 1,000 ms default.
 */
const saved = process.env.FLOODGATE_TIMEOUT_MS;
afterEach(() => {
  if (saved === undefined) delete process.env.FLOODGATE_TIMEOUT_MS;
  else process.env.FLOODGATE_TIMEOUT_MS = saved;
});

test.each([
  ['unset', 'fallback', undefined],
  ['1000', 'redis', '1000'],
] as const)('FLOODGATE_TIMEOUT_MS %s: a check whose store answers in 400 ms is decided by %s', async (_name, source, env) => {
  if (env === undefined) delete process.env.FLOODGATE_TIMEOUT_MS;
  else process.env.FLOODGATE_TIMEOUT_MS = env;
  const { store, rt, limiter } = scripted({ prefix: uniquePrefix('deftimeout'), limits: { limit: 5, window: '1m' } });
  store.behave({ answer: 400 });
  const decision = limiter.check('ip:192.0.2.1');
  await rt.advance(400);
  expect((await decision).source).toBe(source);
  await limiter.close();
});

test('a limiter that sets timeoutMs keeps it; one that sets none takes the variable', async () => {
  process.env.FLOODGATE_TIMEOUT_MS = '5000';
  const limits = { limit: 1, window: '1s' };
  // The memory store has no deadline (it answers at once): the variable's value is resolved all the same.
  expect(resolveOptions({ limits }).timeoutMs).toBe(5_000);
  delete process.env.FLOODGATE_TIMEOUT_MS;
  expect(resolveOptions({ limits }).timeoutMs).toBe(DEFAULT_TIMEOUT_MS);
  process.env.FLOODGATE_TIMEOUT_MS = '5000';
  const { store, rt, limiter } = scripted({ prefix: uniquePrefix('deftimeout'), limits, timeoutMs: 100 });
  store.behave({ answer: 400 });
  const decision = limiter.check('ip:192.0.2.2');
  await rt.advance(400);
  expect((await decision).source).toBe('fallback');
  await limiter.close();
});

test.each(['0', '-5', '1.5', '250ms', ' 250', '60001', 'abc'])("FLOODGATE_TIMEOUT_MS='%s' is a ConfigError naming the variable", (env) => {
  let error: unknown;
  try {
    defaultTimeoutMs(env);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as ConfigError).option).toBe('FLOODGATE_TIMEOUT_MS');
  expect((error as ConfigError).message).toContain(`got '${env}'`);
  // And a limiter made meanwhile is refused, not made with a deadline nobody asked for.
  process.env.FLOODGATE_TIMEOUT_MS = env;
  expect(() => resolveOptions({ limits: { limit: 1, window: '1s' } })).toThrow(ConfigError);
});

test("'' and unset are the default", () => {
  expect([defaultTimeoutMs(''), defaultTimeoutMs(undefined), defaultTimeoutMs('60000'), defaultTimeoutMs('1')]).toEqual([
    250, 250, 60_000, 1,
  ]);
});
