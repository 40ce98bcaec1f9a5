import request from 'supertest';
import { ArgumentError, createLimiter } from '@floodgate/core';
import { closeClients, connect, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import { servedLimits } from './served-limit';

/*
 * docs/overrides.md, "Who may set them": an override naming a client's address in a form no check holds
 * (one IPv6 address where the adapters key its /56, a bare address, another spelling) would never apply;
 * set() refuses it with the identifier meant, and that one applies to the client's requests. Clients here
 * come through a trusted proxy (X-Forwarded-For from loopback), so a test can be any address.
 */
const redis = connect();
const serve = servedLimits();
afterAll(closeClients);

// Mid-hour, on the limiter's manual clock: one window for the whole test.
const NOW = Date.UTC(2030, 0, 1, 12, 30);

const app = (ipv6Subnet?: number | false): ReturnType<typeof serve> =>
  serve({
    redis,
    prefix: uniquePrefix('ov-ids'),
    clock: () => NOW,
    limits: { limit: 100, window: '1h' },
    overrides: true,
    ...(ipv6Subnet === undefined ? {} : { ipv6Subnet }),
    logger: { warn: () => undefined },
  });

/** How many of `n` requests from `address` were admitted. */
async function admitted(url: string, address: string, n: number): Promise<number> {
  let ok = 0;
  for (let i = 0; i < n; i++) if ((await request(url).get('/').set('x-forwarded-for', address)).status === 200) ok++;
  return ok;
}

const punish = { limits: { limit: 3, window: '1h' } };

test('one IPv6 address where the adapters key its /56: refused with the /56, which applies to the client', async () => {
  const { url, limit } = await app();
  const set = limit.limiter.overrides.set('ip:2001:db8::1', punish);
  await expect(set).rejects.toThrow(ArgumentError);
  await expect(limit.limiter.overrides.set('ip:2001:db8::1', punish)).rejects.toThrow(
    'names one IPv6 address, and checks key an IPv6 client by its /56 network (ipv6Subnet), so no check would apply it: did you mean "ip:2001:db8::/56"?',
  );
  expect(await limit.limiter.overrides.list()).toEqual([]);
  await limit.limiter.overrides.set('ip:2001:db8::/56', punish);
  expect(await admitted(url, '2001:db8::1', 5)).toBe(3);
  // Any address of that /56.
  expect(await admitted(url, '2001:db8:0:ff::9', 2)).toBe(0);
});

test('a bare address, another spelling, a range: refused, naming what they mean', async () => {
  const { limit } = await app();
  const refusals: [string, string][] = [
    ['203.0.113.7', 'has no kind, so no check would apply it: did you mean "ip:203.0.113.7"?'],
    ['2001:db8::1', 'has no kind, so no check would apply it: did you mean "ip:2001:db8::/56"?'],
    ['ip:::ffff:203.0.113.7', 'is not written as checks write it, so no check would apply it: did you mean "ip:203.0.113.7"?'],
    ['ip:2001:DB8::/56', 'is not written as checks write it, so no check would apply it: did you mean "ip:2001:db8::/56"?'],
    ['ip:10.0.0.0/8', 'names a range of addresses, and a check names one client: for a range use the allow and deny lists'],
  ];
  for (const [id, message] of refusals) await expect(limit.limiter.overrides.set(id, punish)).rejects.toThrow(message);
  expect(await limit.limiter.overrides.list()).toEqual([]);
  // What no address is, as typed.
  await limit.limiter.overrides.set('ip:unknown', punish);
  await limit.limiter.overrides.set('user:2001', punish);
  expect((await limit.limiter.overrides.list()).map((o) => o.identifier)).toEqual(['ip:unknown', 'user:2001']);
});

test('an app that keys each IPv6 address alone (ipv6Subnet: false): the address is its identifier', async () => {
  const { url, limit } = await app(false);
  await limit.limiter.overrides.set('ip:2001:db8::1', punish);
  expect(await admitted(url, '2001:db8::1', 5)).toBe(3);
  expect(await admitted(url, '2001:db8::2', 2)).toBe(2);
  await expect(limit.limiter.overrides.set('2001:db8::2', punish)).rejects.toThrow('did you mean "ip:2001:db8::2"?');
});

test('a limiter no adapter checks takes every form an adapter may hold, and refuses the others', async () => {
  const limiter = createLimiter({
    ...TEST_DEADLINE,
    redis,
    prefix: uniquePrefix('ov-ids'),
    limits: { limit: 100, window: '1h' },
    overrides: true,
  });
  try {
    await limiter.overrides.set('ip:2001:db8::1', punish);
    await limiter.overrides.set('ip:2001:db8::/64', punish);
    await expect(limiter.overrides.set('203.0.113.7', punish)).rejects.toThrow('did you mean "ip:203.0.113.7"?');
    // get and delete reach what an earlier version stored, whatever its form.
    expect(await limiter.overrides.get('203.0.113.7')).toBeUndefined();
    expect(await limiter.overrides.delete('203.0.113.7')).toBe(false);
  } finally {
    await limiter.close();
  }
});

test('block() and reset() of an address in a form no check holds: refused with the identifier meant, which blocks the client', async () => {
  const { url, limit } = await app();
  const { limiter } = limit;
  // One IPv6 address where checks hold its /56: a block no check would see, the client left admitted.
  await expect(limiter.block('ip:2001:db8::1', { duration: '1h' })).rejects.toThrow(
    'block() of "ip:2001:db8::1" names one IPv6 address, and checks key an IPv6 client by its /56 network (ipv6Subnet), so no check would see the block: did you mean "ip:2001:db8::/56"?',
  );
  await expect(limiter.block('203.0.113.7', { duration: '1h' })).rejects.toThrow('did you mean "ip:203.0.113.7"?');
  await expect(limiter.reset(['ip:10.0.0.1', '203.0.113.7'])).rejects.toThrow('reset() of "203.0.113.7" has no kind');
  expect(await admitted(url, '2001:db8::1', 2)).toBe(2);
  await limiter.block('ip:2001:db8::/56', { duration: '1h' });
  expect(await admitted(url, '2001:db8::1', 2)).toBe(0);
  await limiter.unblock('ip:2001:db8::/56');
  await limiter.reset('ip:2001:db8::/56');
  expect(await admitted(url, '2001:db8::1', 2)).toBe(2);
});
