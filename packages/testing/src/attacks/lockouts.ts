import type Redis from 'ioredis';
import request from 'supertest';
import { closeClients, connect, uniquePrefix } from '../clients';
import type { AdapterFactory, NeutralOptions, TestApp } from '../conformance';
import { restDescribe, test } from '../suite-part';
import { deadlineFactory } from '../deadline';

/*
 * A lockout as a lever against someone else (docs/security.md, "Lockouts as a lever against someone
 * else"), mounted over real sockets against each adapter's conformance app: failed logins from one address
 * naming Alice's account must lock the attacker out of her account, never Alice logging in from her own
 * address. The client address comes from X-Forwarded-For (the app trusts its loopback proxy), the account a
 * login names from the x-user header (the suite's auth stand-in), and the handler answers what x-status says.
 */

const ATTACKER = '203.0.113.66';
const ALICE = '198.51.100.7';

/** The account a login request names (the suite's stand-in for a username in the body). */
const accountOf = (req: { headers: Record<string, string | string[] | undefined> }): string => String(req.headers['x-user'] ?? '');

/** The login recipe of docs/lockouts.md, as each adapter takes it (the account from x-user instead of the body). */
function loginRecipe(redis: Redis, prefix: string): NeutralOptions {
  return {
    redis,
    prefix,
    name: 'login',
    limits: [
      { limit: 5, window: '1m', for: 'login' },
      { limit: 30, window: '1h', for: 'ip' },
    ],
    lockout: { after: 3, within: '10m', duration: '15m', backoff: 2, maxDuration: '1d', scope: ['ip', 'login'] },
    identify: (req, [ip]) => [ip!, `login:${ip}|${accountOf(req)}`],
  } as NeutralOptions;
}

export function lockoutsAttacks(anyFactory: AdapterFactory): void {
  const factory = deadlineFactory(anyFactory);
  restDescribe(`${factory.name}: a lockout is no lever against someone else's account`, () => {
    // Made when this suite starts: the suites before it close every client made before their end.
    let redis: Redis;
    beforeAll(() => {
      redis = connect();
    });
    const apps: TestApp[] = [];
    afterEach(async () => {
      await Promise.all(apps.splice(0).map((a) => a.close()));
    });
    afterAll(closeClients);

    const login = async (app: TestApp, from: string, account: string, status: number): Promise<request.Response> =>
      request(app.url)
        .post('/login')
        .set({ 'X-Forwarded-For': from, 'x-user': account, 'x-status': String(status) });

    test('8 failed logins naming alice from one address lock that address out of her account, not alice from hers', async () => {
      const app = await factory.makeApp({ trustProxy: true, routes: { '/login': loginRecipe(redis, uniquePrefix(`${factory.name}-lv`)) } });
      apps.push(app);
      const attack: number[] = [];
      for (let i = 0; i < 8; i++) attack.push((await login(app, ATTACKER, 'alice', 401)).status);
      // Five wrong passwords reach the handler; three are refused by the pair's rule, and the third locks the pair.
      expect(attack).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
      const locked = await login(app, ATTACKER, 'alice', 200);
      expect(locked.status).toBe(429);
      expect(Number(locked.headers['retry-after'])).toBeGreaterThan(850);
      expect(Number(locked.headers['retry-after'])).toBeLessThanOrEqual(900);
      // Alice, from her own address, logs in: every time.
      const alice: number[] = [];
      for (let i = 0; i < 3; i++) alice.push((await login(app, ALICE, 'alice', 200)).status);
      expect(alice).toEqual([200, 200, 200]);
      expect(app.hits()).toBe(5 + 3);
    });

    test('the login recipe as it was (a lockout with no scope: every identifier, the account included) is refused at construction', async () => {
      const asItWas = {
        redis,
        prefix: uniquePrefix(`${factory.name}-lw`),
        name: 'login',
        limits: { limit: 5, window: '1m' },
        lockout: { after: 3, within: '10m', duration: '15m', backoff: 2, maxDuration: '1d' },
      } as unknown as NeutralOptions;
      const made = factory.makeApp({ trustProxy: true, routes: { '/login': asItWas } });
      made.then(
        (app) => apps.push(app),
        () => undefined,
      );
      await expect(made).rejects.toMatchObject({
        code: 'ERR_FLOODGATE_CONFIG',
        option: 'lockout.scope',
      });
    });
  });
}
