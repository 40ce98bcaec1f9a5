import { createLimiter, type Limiter } from '@floodgate/core';
import { createHttpLimiter, createHttpSlowDown, resetWarnings, type HttpOutcome } from '@floodgate/core/adapter';
import { settled } from '@floodgate/core/testing';

/*
 * `settle` in core's HTTP layer, below any server (src/http/settle.ts): what it refuses at construction, and
 * a shared limiter that is not createLimiter()'s own (a wrapper) reserving through its own reserve(). The
 * behaviour over real sockets, with every adapter, is packages/testing/src/budget-conformance.ts.
 */
interface Req {
  tokens: number;
}
const limits = [
  { limit: 5, window: '1m' },
  { limit: 100, window: '1m', unit: 'tokens' },
];
const tokensLeft = async (limiter: Limiter, id: string): Promise<number | undefined> =>
  (await limiter.peek(id, { cost: { requests: 0, tokens: 0 } })).states.find((s) => s.unit === 'tokens')?.remaining;

test('slowDown() refuses settle, and so does an own limiter told refunds: false', () => {
  expect(() => createHttpSlowDown<Req>({ limits, settle: () => 1 } as never)).toThrow(expect.objectContaining({ option: 'settle' }));
  expect(() => createHttpLimiter<Req>({ limits, refunds: false, settle: () => 1 })).toThrow(expect.objectContaining({ option: 'settle' }));
  expect(() => createHttpLimiter<Req>({ limits, settle: () => 1, skipFailedRequests: true })).toThrow(
    expect.objectContaining({ option: 'settle', message: expect.stringContaining('skipFailedRequests') }),
  );
  // A reservation settles under the rules it was checked under: a request's own limit is refused beside it.
  expect(() => createHttpLimiter<Req>({ limits: [{ limit: (req: Req) => req.tokens, window: '1m' }], settle: () => 1 } as never)).toThrow(
    expect.objectContaining({ option: 'settle', message: expect.stringContaining('function of the request') }),
  );
});

test("a wrapped shared limiter reserves through its own reserve(), and completed() settles with the app's answer", async () => {
  const inner = createLimiter({ limits, refunds: true });
  const reserved: unknown[] = [];
  const wrapped = new Proxy(inner, {
    get(target, key, receiver) {
      if (key === 'reserve') return (ids: string, options: unknown) => (reserved.push(options), target.reserve(ids, options as never));
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const http = createHttpLimiter<Req>({
    limiter: wrapped,
    identify: () => 'key:w',
    cost: { requests: 1, tokens: 60 },
    settle: (req) => ({ requests: 1, tokens: req.tokens }),
  });
  try {
    const outcome: HttpOutcome = await http.decide({ tokens: 25 }, '10.0.0.1');
    expect(outcome.action).toBe('next');
    expect(outcome.own).toBeDefined();
    expect(reserved).toEqual([{ cost: { requests: 1, tokens: 60 } }]);
    expect(await tokensLeft(inner, 'key:w')).toBe(40);
    http.completed(outcome, false, 200, [{ tokens: 25 }]);
    // Once: a second completed() of the same outcome settles nothing more.
    http.completed(outcome, true, 200, [{ tokens: 0 }]);
    await settled();
    expect(await tokensLeft(inner, 'key:w')).toBe(75);
    // The next request's estimate of 60 fits in the 75 the settle left.
    expect((await http.decide({ tokens: 0 }, '10.0.0.1')).action).toBe('next');
  } finally {
    await inner.close();
  }
});

test("the application's settle throwing, rejecting or answering nothing: the estimate stays, each a settle-failed event, warned", async () => {
  resetWarnings();
  const reasons: string[] = [];
  const warned: string[] = [];
  const inner = createLimiter({ limits, refunds: true, onEvent: (e) => void (e.type === 'settle-failed' && reasons.push(e.reason)) });
  const answers: Array<(req: Req) => unknown> = [
    () => {
      throw new Error('no usage');
    },
    () => Promise.reject(new Error('no usage')),
    () => undefined,
  ];
  const http = createHttpLimiter<Req>({
    limiter: inner,
    identify: () => 'key:t',
    cost: { requests: 1, tokens: 20 },
    settle: (req) => answers[req.tokens]!(req) as never,
    logger: { warn: (m) => void warned.push(m) },
  });
  try {
    for (let i = 0; i < answers.length; i++) {
      const outcome = await http.decide({ tokens: i }, '10.0.0.1');
      http.completed(outcome, true, 200, [{ tokens: i }]);
    }
    await settled();
    expect(reasons.sort()).toEqual(['invalid', 'threw', 'threw']);
    expect(await tokensLeft(inner, 'key:t')).toBe(100 - 3 * 20);
    expect(warned.length).toBeGreaterThanOrEqual(1);
    for (const line of warned) expect(line).toContain('[settle-failed]');
  } finally {
    await inner.close();
  }
});
