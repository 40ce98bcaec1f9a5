import request from 'supertest';
import { createLimiter, type Limiter } from '@floodgate/core';
import type { Logger } from '@floodgate/core/adapter';
import { closeClients, connect, uniquePrefix } from '../clients';
import type { AdapterFactory, NeutralOptions, TestApp } from '../conformance';
import { restDescribe, test } from '../suite-part';
import { deadlineFactory, TEST_DEADLINE } from '../deadline';

/*
 * docs/security.md, "List entries that name nobody", over real sockets: each spelling a deny list accepts
 * refuses exactly the client it names (the proxy is trusted, so X-Forwarded-For is the client), and each
 * form no request's address is read in fails at construction naming the entry instead of being kept as an
 * identifier that never matches.
 */

/** [entry, requests it must refuse, requests it must let through]: a request is its X-Forwarded-For, or `x-user:` / `x-tenant:` a header. */
const SPELLINGS: readonly [string, string[], string[]][] = [
  ['198.51.100.7', ['198.51.100.7', '::ffff:198.51.100.7'], ['198.51.100.8']],
  ['ip:198.51.100.7', ['198.51.100.7'], ['198.51.100.70']],
  ['198.51.100.0/24', ['198.51.100.200'], ['198.51.101.1']],
  ['::ffff:198.51.100.7', ['198.51.100.7', '::ffff:198.51.100.7'], ['198.51.100.8']],
  ['::FFFF:C633:6407', ['198.51.100.7'], ['198.51.100.8']],
  ['[::ffff:198.51.100.7]', ['198.51.100.7'], ['198.51.100.8']],
  ['2001:DB8::7', ['2001:db8::7', '2001:0DB8:0:0::0007'], ['2001:db8::8']],
  ['2001:0db8:0000:0000:0000:0000:0000:0007', ['2001:db8::7'], ['2001:db8::8']],
  ['[2001:db8::7]', ['2001:db8::7'], ['2001:db8::8']],
  ['ip:2001:db8::/48', ['2001:db8:0:ff::1'], ['2001:db9::1']],
  ['64:ff9b::198.51.100.7', ['64:ff9b::c633:6407'], ['198.51.100.7']],
  ['2002:c633:6407::/48', ['2002:c633:6407::1'], ['198.51.100.7']],
  ['user:mallory', ['x-user:mallory'], ['x-user:Mallory']],
  ['tenant:evil', ['x-tenant:evil'], ['x-tenant:Evil']],
];

/** Forms refused at construction (each used to be kept, and to refuse nobody). */
const REFUSED = ['0x7f.1', '127.1', '010.0.0.1', 'fe80::1%eth0', 'IP:127.0.0.1', 'usr:mallory', '::ffff:0:127.0.0.1', '127.0.0.1/8'];

const headersOf = (client: string): Record<string, string> => {
  const header = /^(x-user|x-tenant):(.*)$/.exec(client);
  return header ? { 'x-forwarded-for': '192.0.2.1', [header[1]!]: header[2]! } : { 'x-forwarded-for': client };
};

export function listsAttacks(anyFactory: AdapterFactory): void {
  const factory = deadlineFactory(anyFactory);
  restDescribe(`${factory.name}: list entries that name nobody`, () => {
    const redis = connect();
    const apps: TestApp[] = [];
    const limiters: Limiter[] = [];
    const logger: Logger = { warn: () => undefined };
    afterEach(async () => {
      await Promise.all(apps.splice(0).map((a) => a.close()));
      await Promise.all(limiters.splice(0).map((l) => l.close()));
    });
    afterAll(closeClients);

    test('a deny entry in each accepted spelling refuses the client it names, and only it', async () => {
      const shared = createLimiter({
        ...TEST_DEADLINE,
        redis,
        prefix: uniquePrefix('lsa'),
        limits: { limit: 1000, window: '1m' },
        identifierKinds: ['tenant'],
      });
      limiters.push(shared);
      const identify = (req: { headers: Record<string, unknown> }, defaults: string[]): string[] =>
        typeof req.headers['x-tenant'] === 'string' ? [...defaults, `tenant:${req.headers['x-tenant']}`] : defaults;
      const app = await factory.makeApp({ global: { limiter: shared, identify, logger } as NeutralOptions, trustProxy: true });
      apps.push(app);
      const seen: string[] = [];
      for (const [entry, refused, admitted] of SPELLINGS) {
        shared.setLists({ deny: [entry] });
        for (const client of refused) seen.push(`${entry} ${client} ${(await request(app.url).get('/').set(headersOf(client))).status}`);
        for (const client of admitted) seen.push(`${entry} ${client} ${(await request(app.url).get('/').set(headersOf(client))).status}`);
      }
      const expected = SPELLINGS.flatMap(([entry, refused, admitted]) => [
        ...refused.map((c) => `${entry} ${c} 403`),
        ...admitted.map((c) => `${entry} ${c} 200`),
      ]);
      expect(seen).toEqual(expected);
      expect(app.hits()).toBe(SPELLINGS.reduce((n, [, , admitted]) => n + admitted.length, 0));
    });

    test.each(REFUSED)('deny: [%j] fails at construction naming deny[0], instead of refusing nobody', async (entry) => {
      const outcome = await factory
        .makeApp({ global: { redis, prefix: uniquePrefix('lsa'), limits: { limit: 5, window: '1m' }, deny: [entry] } })
        .then(
          async (app) => {
            apps.push(app);
            return `started, and answered the loopback client ${(await request(app.url).get('/')).status}`;
          },
          (err: { code?: string; option?: string }) => `${err.code} ${err.option}`,
        );
      expect(outcome).toBe('ERR_FLOODGATE_CONFIG deny[0]');
    });
  });
}
