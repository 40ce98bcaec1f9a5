import type { Cluster } from 'ioredis';
import { ConfigError, createLimiter, type Limiter, type LimiterOptions } from '@floodgate/core';
import { blockKey, encodeIdentifier, keySlot } from '../../src/scripts/keys';
import { closeClients, connect, uniquePrefix, useCluster } from '@floodgate/testing';

/*
 * docs/security.md, "Lockouts as a lever against someone else": a lockout locks only the identifier kinds
 * its `scope` names. With the login recipe (docs/lockouts.md) the attacker's failed logins
 * naming Alice lock his address's attempts on her account, never Alice logging in from her own address;
 * a lockout with no scope (which locked every identifier a check named, the account included) is refused.
 */
afterAll(closeClients);
const redis = connect();
const T0 = Date.UTC(2030, 0, 1, 0, 0, 10);
const MINUTE = 60_000;
const ATTACKER = 'ip:203.0.113.66';
const ALICE = 'ip:198.51.100.7';
const pair = (ip: string, account: string): string => `login:${ip}|${account}`;

type Store = 'redis' | 'memory' | Cluster;

/** The login recipe of docs/lockouts.md: 5 per minute per (address, account), 30 per hour per address; both locked. */
function logins(store: Store, clock: () => number, options: Partial<LimiterOptions> = {}): Limiter {
  return createLimiter({
    prefix: uniquePrefix('lever'),
    name: 'login',
    limits: [
      { limit: 5, window: '1m', for: 'login' },
      { limit: 30, window: '1h', for: 'ip' },
    ],
    lockout: { after: 3, within: '10m', duration: '15m', backoff: 2, maxDuration: '1d', scope: ['ip', 'login'] },
    blockCache: false,
    clock,
    ...(store === 'memory' ? {} : { redis: store === 'redis' ? redis : store, failure: 'closed' as const, timeoutMs: 5_000 }),
    ...options,
  });
}

/** Eight failed logins from the attacker's address naming alice: what each check answered. */
async function attack(l: Limiter, ids: (ip: string) => string[]): Promise<string[]> {
  const reasons: string[] = [];
  for (let i = 0; i < 8; i++) {
    const d = await l.check(ids(ATTACKER));
    reasons.push(d.allowed ? 'allowed' : (d.blockReason ?? d.reason!));
  }
  return reasons;
}

function leverTests(store: () => Store): void {
  test('the login recipe: 8 failed logins naming alice lock the attacker out of her account; alice from her address is admitted', async () => {
    const now = T0;
    const l = logins(store(), () => now);
    const ids = (ip: string): string[] => [ip, pair(ip, 'alice')];
    // Five attempts pass the pair's rule; three are refused by it, and the third locks the pair out.
    expect(await attack(l, ids)).toEqual(['allowed', 'allowed', 'allowed', 'allowed', 'allowed', 'limit', 'limit', 'lockout']);
    expect(await l.check(ids(ATTACKER))).toMatchObject({ reason: 'blocked', blockReason: 'lockout', identifier: pair(ATTACKER, 'alice') });
    expect((await l.check(ids(ATTACKER))).retryAfterMs).toBe(15 * MINUTE);
    // Alice, from her own address: admitted every time (before the scope: blocked every time, for 15 minutes).
    const alice = [];
    for (let i = 0; i < 3; i++) alice.push((await l.check(ids(ALICE))).allowed);
    expect(alice).toEqual([true, true, true]);
    // The attacker's address itself was never refused by its own rule, so it is not locked: only the pair is.
    expect((await l.check([ATTACKER, pair(ATTACKER, 'bob')])).allowed).toBe(true);
    await l.close();
  });

  test('the same attack sent at once (one batch on one Redis): the same outcome', async () => {
    const now = T0;
    const l = logins(store(), () => now);
    const ids = [ATTACKER, pair(ATTACKER, 'alice')];
    const all = await Promise.all(Array.from({ length: 8 }, () => l.check(ids)));
    expect(all.map((d) => (d.allowed ? 'allowed' : (d.blockReason ?? d.reason)))).toEqual([
      ...Array.from({ length: 5 }, () => 'allowed'),
      'limit',
      'limit',
      'lockout',
    ]);
    expect((await l.check([ALICE, pair(ALICE, 'alice')])).allowed).toBe(true);
    await l.close();
  });

  /** The login recipe as it was (5 per minute for every identifier, the account one of them), with `scope`. */
  const withAccount = (clock: () => number, scope: string): Limiter =>
    logins(store(), clock, {
      limits: { limit: 5, window: '1m' },
      lockout: { after: 3, within: '10m', duration: '15m', backoff: 2, maxDuration: '1d', scope },
    });
  const claimed = (ip: string): string[] => [ip, 'user:alice'];

  test("scope ['ip'] with the account as an identifier: the account's rule can refuse alice for a window, never lock her out", async () => {
    let now = T0;
    const l = withAccount(() => now, 'ip');
    expect(await attack(l, claimed)).toEqual(['allowed', 'allowed', 'allowed', 'allowed', 'allowed', 'limit', 'limit', 'lockout']);
    expect(await l.check(claimed(ATTACKER))).toMatchObject({ blockReason: 'lockout', identifier: ATTACKER });
    // The account's budget is shared (a per-account rule is a lever of one window), but it is not locked out...
    expect(await l.check(claimed(ALICE))).toMatchObject({ allowed: false, reason: 'limit', identifier: 'user:alice' });
    expect((await l.peek('user:alice')).blockReason).toBeUndefined();
    // ...so once the window has moved on, alice is admitted; the attacker's address is still locked out.
    now += 2 * MINUTE;
    expect((await l.check(claimed(ALICE))).allowed).toBe(true);
    expect(await l.check(claimed(ATTACKER))).toMatchObject({ blockReason: 'lockout', retryAfterMs: 13 * MINUTE });
    await l.close();
  });

  test("only a kind the scope names is locked: scope ['user'] does lock the account (a choice the docs warn about)", async () => {
    const l = withAccount(() => T0, 'user');
    await attack(l, claimed);
    expect(await l.check(claimed(ALICE))).toMatchObject({ reason: 'blocked', blockReason: 'lockout', identifier: 'user:alice' });
    expect((await l.peek(ATTACKER)).blockReason).toBeUndefined();
    await l.close();
  });

  test('ip:unknown (every client whose address could not be read) is never locked out, even with ip in scope', async () => {
    const now = T0;
    const l = logins(store(), () => now, {
      limits: { limit: 2, window: '1m' },
      lockout: { after: 3, within: '10m', duration: '15m', scope: 'ip' },
    });
    const limited = ['allowed', 'allowed', 'limit', 'limit', 'limit', 'limit', 'limit', 'limit'];
    expect(await attack(l, () => ['ip:unknown'])).toEqual(limited);
    // Any other address is locked out by the same denials.
    expect(await attack(l, (ip) => [ip])).toEqual(['allowed', 'allowed', 'limit', 'limit', 'lockout', 'lockout', 'lockout', 'lockout']);
    await l.close();
  });
}

describe.each(['redis', 'memory'] as const)('on %s', (store) => {
  leverTests(() => store);
});

describe('on a Cluster (the pair, the address and the account in their own slots)', () => {
  const cluster = useCluster();
  test('the identifiers of a login check hash to different slots', () => {
    const slots = [ATTACKER, pair(ATTACKER, 'alice'), 'user:alice'].map((id) => keySlot(blockKey('p', encodeIdentifier(id))));
    expect(new Set(slots).size).toBe(3);
  });
  leverTests(() => cluster.client);
});

describe('a lockout must say what it may lock: lockout.scope, checked at construction', () => {
  const base = { after: 3, within: '10m', duration: '15m' };
  test.each([
    ['missing (the login recipe as it was)', { ...base }, /is required/],
    ['an empty list', { ...base, scope: [] }, /a list of 1 to 32/],
    ['not a list', { ...base, scope: { ip: true } }, /a list of 1 to 32/],
    ['an identifier, not a kind', { ...base, scope: ['ip:1.2.3.4'] }, /identifier kinds/],
    ['a wildcard', { ...base, scope: '*' }, /identifier kinds/],
    ['a number among kinds', { ...base, scope: ['ip', 42] }, /got 42/],
    ['33 kinds', { ...base, scope: Array.from({ length: 33 }, (_, k) => `k${k}`) }, /a list of 1 to 32/],
  ])('%s', (_name, lockout, message) => {
    let error: unknown;
    try {
      createLimiter({ limits: { limit: 5, window: '1m' }, lockout: lockout as LimiterOptions['lockout'] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ option: 'lockout.scope', message: expect.stringMatching(message) });
  });

  test('an unknown kind, or one no rule applies to (it would never be locked out), is refused; a misspelt key suggests scope', () => {
    const limits = [
      { limit: 5, window: '1m', for: 'login' },
      { limit: 30, window: '1h', for: 'ip' },
    ];
    expect(() => createLimiter({ limits, lockout: { after: 3, within: '1m', duration: '1m', scope: ['ip', 'user'] } })).toThrow(
      expect.objectContaining({ option: 'lockout.scope', message: expect.stringMatching(/'user', a kind no rule applies to/) }),
    );
    expect(() => createLimiter({ limits, lockout: { after: 3, within: '1m', duration: '1m', scopes: ['ip'] } as never })).toThrow(
      expect.objectContaining({ option: 'lockout.scopes', message: expect.stringMatching(/did you mean `scope`/) }),
    );
    // A kind the limiter does not know (not ip or user, no rule's `for`, not in identifierKinds): a typo.
    expect(() =>
      createLimiter({ limits: { limit: 5, window: '1m' }, lockout: { after: 3, within: '1m', duration: '1m', scope: 'usr' } }),
    ).toThrow(
      expect.objectContaining({
        option: 'lockout.scope',
        message: expect.stringMatching(/'usr', a kind no identifier of this limiter has/),
      }),
    );
    // With an unscoped rule, any kind the limiter knows has a rule.
    const declared = createLimiter({
      limits: { limit: 5, window: '1m' },
      identifierKinds: ['api-key'],
      lockout: { after: 3, within: '1m', duration: '1m', scope: 'api-key' },
    });
    void declared.close();
  });
});
