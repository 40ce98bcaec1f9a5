import { createLimiter, type Limiter } from '@floodgate/core';
import { registryKey } from '@floodgate/core/admin';
import { closeClients, connect, testRedisUrl, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import { floodgateBin, sleep } from './helpers';

/*
 * docs/cli.md, "Commands": an identifier naming a client's address in a form the application's checks do
 * not hold (one IPv6 address where the adapters key its /56, a range, another spelling, a bare address) is
 * a usage error naming the identifier meant, in every command that takes one, read by core as overrides
 * and lists read addresses; after --, as typed. Through the built bin.
 */
const url = testRedisUrl();
const redis = connect(url);
let prefix: string;
let api: Limiter;
const args = (...a: string[]): string[] => [...a, '--url', url, '--prefix', prefix];

beforeAll(async () => {
  prefix = uniquePrefix('cli-address');
  api = createLimiter({
    ...TEST_DEADLINE,
    redis,
    prefix,
    name: 'api',
    limits: { free: [{ limit: 2, window: '1h' }], pro: [{ limit: 9, window: '1h' }] },
    overrides: true,
  });
  await api.check('user:0');
  for (let i = 0; i < 100 && (await redis.hlen(registryKey(prefix))) < 1; i++) await sleep(20);
});
afterAll(async () => {
  await api.close();
  await closeClients();
});

test('one IPv6 address: refused in every command, naming its /56', async () => {
  for (const command of [
    ['override', 'set', 'ip:2001:db8::1', '--plan', 'pro'],
    ['inspect', 'ip:2001:db8::1'],
    ['block', 'ip:2001:db8::1', '--for', '1m'],
  ]) {
    const ran = await floodgateBin(args(...command));
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain(
      "'ip:2001:db8::1' names one IPv6 address, and checks key an IPv6 client by its /56 network (ipv6Subnet): did you mean ip:2001:db8::/56? (an identifier that the application checks as typed goes after --:",
    );
  }
  expect(await api.overrides.list()).toEqual([]);
  const set = await floodgateBin(args('override', 'set', 'ip:2001:db8::/56', '--plan', 'pro'));
  expect([set.code, set.stderr]).toEqual([0, '']);
});

test('a range, another spelling, a bare address', async () => {
  const cases: [string[], string][] = [
    [
      ['block', 'ip:10.0.0.0/8', '--for', '1m'],
      "'ip:10.0.0.0/8' names a range of addresses, and a check names one client: for a range use the allow and deny lists (",
    ],
    [
      ['override', 'get', 'ip:::ffff:203.0.113.7'],
      "'ip:::ffff:203.0.113.7' is not written as checks write it: did you mean ip:203.0.113.7? (",
    ],
    [
      ['reset', '2001:db8::7'],
      "'2001:db8::7' has no kind: did you mean ip:2001:db8::/56? (an identifier that really has none goes after --",
    ],
  ];
  for (const [command, message] of cases) {
    const ran = await floodgateBin(args(...command));
    expect([ran.code, ran.stderr]).toEqual([2, expect.stringContaining(message)]);
  }
});

test('after --, as typed (an application with ipv6Subnet: false checks one address alone)', async () => {
  const set = await floodgateBin([...args('override', 'set', '--plan', 'pro'), '--', 'ip:2001:db8::1']);
  expect([set.code, set.stderr]).toEqual([0, '']);
  expect((await api.overrides.get('ip:2001:db8::1'))?.plan).toBe('pro');
});
