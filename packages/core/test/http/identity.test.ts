import { defaultIdentifiers, identifiersFrom, normaliseIp, resolveIpv6Subnet, userKey } from '../../src/http/identity';
import { UNKNOWN_IP } from '../../src/scripts/keys';

describe('normaliseIp', () => {
  test.each([
    ['10.1.2.3', 56, '10.1.2.3'],
    ['::ffff:10.1.2.3', 56, '10.1.2.3'],
    ['::ffff:a01:203', 56, '10.1.2.3'],
    ['2001:db8:1200:ab::1', 56, '2001:db8:1200::/56'],
    ['2001:db8:1200:ff:1:2:3:4', 56, '2001:db8:1200::/56'],
    ['2001:db8:12ff::9', 56, '2001:db8:12ff::/56'],
    ['2001:db8:1:2:3:4:5:6', 64, '2001:db8:1:2::/64'],
    ['2001:db8:1:2:3:4:5:6', 32, '2001:db8::/32'],
    ['2001:DB8::1', false, '2001:db8::1'],
    ['fe80::1%eth0', 64, 'fe80::/64'],
    // Ports, brackets and quotes, as proxies write them: one budget per address, not per connection.
    ['198.51.100.9:51234', 56, '198.51.100.9'],
    ['[2001:db8::1]:443', false, '2001:db8::1'],
    ['[2001:db8::1]', 64, '2001:db8::/64'],
    ['  10.1.2.3 ', 56, '10.1.2.3'],
    ['"[2001:db8:1200:ab::1]:8080"', 56, '2001:db8:1200::/56'],
    ['[::ffff:10.1.2.3]:80', 56, '10.1.2.3'],
  ] as const)('%s /%s -> %s', (ip, subnet, expected) => {
    expect(normaliseIp(ip, subnet)).toBe(expected);
  });

  test('a missing address is undefined, never a string', () => {
    expect(normaliseIp(undefined, 56)).toBeUndefined();
    expect(normaliseIp('', 56)).toBeUndefined();
    expect(normaliseIp(null, 56)).toBeUndefined();
  });

  test('a string that is still not an IP is undefined: it never becomes a key verbatim', () => {
    for (const junk of [
      'not-an-ip',
      'unknown',
      '1',
      '0x7f.1',
      '010.1.2.3',
      '1.2.3.4:99999999',
      '1.2.3.4:80:80',
      '[1.2.3.4]x',
      '::1::2',
      '1.2.3.256',
      '2001:db8::1:443x',
    ]) {
      expect(normaliseIp(junk, 56)).toBeUndefined();
    }
  });
});

test('userKey keeps strings and finite numbers, 0 included', () => {
  expect(userKey('alice')).toBe('alice');
  expect(userKey(0)).toBe('0');
  expect(userKey(42)).toBe('42');
  expect(userKey(10n)).toBe('10');
  for (const bad of [undefined, null, '', NaN, Infinity, {}, [], true]) expect(userKey(bad)).toBeUndefined();
});

test('defaultIdentifiers never invents ip:undefined or user:undefined; an unknown address is ip:unknown', () => {
  expect(defaultIdentifiers({ ip: '::ffff:1.2.3.4', user: 0 }, 56)).toEqual(['ip:1.2.3.4', 'user:0']);
  expect(defaultIdentifiers({ ip: undefined, user: 'bob' }, 56)).toEqual([UNKNOWN_IP, 'user:bob']);
  expect(defaultIdentifiers({ ip: '1.2.3.4', user: undefined }, 56)).toEqual(['ip:1.2.3.4']);
  expect(defaultIdentifiers({ ip: undefined }, 56)).toEqual([UNKNOWN_IP]);
  expect(defaultIdentifiers({ ip: 'garbage' }, 56)).toEqual([UNKNOWN_IP]);
  expect(UNKNOWN_IP).toBe('ip:unknown');
});

test('identifiersFrom: a string replaces, an array is the list; junk entries are dropped', () => {
  expect(identifiersFrom('key:1')).toEqual(['key:1']);
  expect(identifiersFrom(['ip:1.2.3.4', '', undefined, 7, 'tenant:a'])).toEqual(['ip:1.2.3.4', 'tenant:a']);
  expect(identifiersFrom(undefined)).toEqual([]);
  expect(identifiersFrom('')).toEqual([]);
});

test('ipv6Subnet is validated: 32..64 or false', () => {
  expect(resolveIpv6Subnet(undefined)).toBe(56);
  expect(resolveIpv6Subnet(false)).toBe(false);
  expect(resolveIpv6Subnet(48)).toBe(48);
  for (const bad of [31, 65, 56.5, '56', true])
    expect(() => resolveIpv6Subnet(bad)).toThrow(expect.objectContaining({ option: 'ipv6Subnet' }));
});

test('the canonical IPv4 fast path prints what ipaddr.js would', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ipaddr = require('ipaddr.js') as typeof import('ipaddr.js');
  const samples = ['0.0.0.0', '255.255.255.255', '10.0.0.1', '192.168.100.99', '1.2.3.4', '249.250.199.100'];
  for (let i = 0; i < 200; i++) samples.push([0, 0, 0, 0].map(() => Math.floor(Math.random() * 256)).join('.'));
  for (const ip of samples) expect(normaliseIp(ip, 56)).toBe(ipaddr.process(ip).toString());
  // Not canonical: still parsed (and normalised) by ipaddr.js.
  expect(normaliseIp('::ffff:10.0.0.1', 56)).toBe('10.0.0.1');
});
