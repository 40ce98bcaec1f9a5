import { createLimiter, type LimiterEvent } from '@floodgate/core';
import { closeClients, connect, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';

afterAll(closeClients);

/** Ten minutes into an hour, held still: a fixed hour on the real clock ends at the top of every hour, mid-test. */
const STILL = Date.UTC(2031, 0, 1, 0, 10);

test('shadow mode allows everything and reports each would-be denial through onEvent', async () => {
  const events: LimiterEvent[] = [];
  const l = createLimiter({
    ...TEST_DEADLINE,
    algorithm: 'fixed-window',
    redis: connect(),
    prefix: uniquePrefix('shadow'),
    mode: 'shadow',
    limits: { limit: 3, window: '1h' },
    clock: () => STILL,
    onEvent: (e) => events.push(e),
  });
  const decisions = [];
  for (let i = 0; i < 5; i++) decisions.push(await l.check('ip:1'));
  expect(decisions.every((d) => d.allowed && d.retryAfterMs === 0)).toBe(true);
  // The first would-be denial from Redis, the next from the block cache (as an enforcing limiter would).
  expect(decisions.map((d) => d.source)).toEqual(['redis', 'redis', 'redis', 'redis', 'cache']);
  expect(decisions.map((d) => d.shadowDenied ?? false)).toEqual([false, false, false, true, true]);
  // Every check is a decision event (shadow: true on the would-be denials); the denials also come as shadow-deny.
  expect(events.filter((e) => e.type === 'decision').map((e) => e.type === 'decision' && e.shadow)).toEqual([
    false,
    false,
    false,
    true,
    true,
  ]);
  const denials = events.filter((e) => e.type !== 'decision');
  expect(denials).toHaveLength(2);
  for (const e of denials) {
    expect(e).toMatchObject({ type: 'shadow-deny', limiter: 'default', decision: { allowed: false, reason: 'limit', limit: 3 } });
  }
  // It counted for real: an enforcing limiter over the same keys sees the limit used up.
  const enforcing = createLimiter({
    ...TEST_DEADLINE,
    algorithm: 'fixed-window',
    redis: connect(),
    prefix: l.prefix,
    limits: { limit: 3, window: '1h' },
    clock: () => STILL,
  });
  expect(await enforcing.peek('ip:1')).toMatchObject({ allowed: false, remaining: 0 });
});

test('shadow mode reports a manual block as a would-be denial too', async () => {
  const events: LimiterEvent[] = [];
  const l = createLimiter({
    ...TEST_DEADLINE,
    algorithm: 'fixed-window',
    redis: connect(),
    prefix: uniquePrefix('shadow'),
    name: 'sb',
    mode: 'shadow',
    limits: { limit: 3, window: '1h' },
    onEvent: (e) => events.push(e),
    failure: 'closed',
    logger: { warn: () => undefined },
  });
  await l.block('ip:2', { duration: '1m', reason: 'test' });
  expect(await l.check('ip:2')).toMatchObject({ allowed: true, shadowDenied: true });
  expect(events.map((e) => e.type)).toEqual(['shadow-deny', 'decision']);
  expect(events[1]).toMatchObject({ type: 'decision', outcome: 'blocked', shadow: true });
  expect((events[0] as { decision: { reason: string } }).decision.reason).toBe('blocked');
});
