import { ANY_IPV6_KEYING, identifierMistake, type Ipv6Keying } from '../../src/config/list-entry';
import { normaliseIp } from '../../src/http/identity';

/*
 * An operator's identifier that names a client's address in a form no check holds (an override's, the
 * command line's): what it means, read as the lists read addresses; a check's own form, and anything that
 * is no address, as typed.
 */
const DEFAULT: Ipv6Keying[] = [56];
const PER_ADDRESS: Ipv6Keying[] = [false];

test.each([
  // identifier, keyings, meant (undefined: fine as typed), why
  ['ip:203.0.113.7', DEFAULT, undefined],
  ['ip:2001:db8::/56', DEFAULT, undefined],
  ['ip:2001:db8::1', PER_ADDRESS, undefined],
  ['ip:2001:db8::/64', ANY_IPV6_KEYING, undefined],
  ['ip:2001:db8::1', ANY_IPV6_KEYING, undefined],
  ['ip:unknown', DEFAULT, undefined],
  ['user:42', DEFAULT, undefined],
  ['key:2001:db8::1', DEFAULT, undefined],
  ['alice', DEFAULT, undefined],
  ['1234', DEFAULT, undefined],
  ['ip:1', DEFAULT, undefined],
  ['cafe:1:2', DEFAULT, undefined],
  ['203.0.113.7:443', DEFAULT, undefined],
])('%s (ipv6Subnet %p): as typed', (identifier, keyings) => {
  expect(identifierMistake(identifier, keyings)).toBeUndefined();
});

test.each([
  ['ip:2001:db8::1', DEFAULT, 'ip:2001:db8::/56', /names one IPv6 address, and checks key an IPv6 client by its \/56 network/],
  ['ip:2001:db8:0:1::7', [64], 'ip:2001:db8:0:1::/64', /by its \/64 network/],
  ['ip:2001:db8::/64', DEFAULT, 'ip:2001:db8::/56', /names a \/64 network, and checks key an IPv6 client by its \/56 network/],
  ['ip:2001:db8::/56', PER_ADDRESS, undefined, /names a range of addresses/],
  ['203.0.113.7', DEFAULT, 'ip:203.0.113.7', /^has no kind$/],
  ['2001:db8::1', DEFAULT, 'ip:2001:db8::/56', /^has no kind$/],
  ['2001:db8::1', PER_ADDRESS, 'ip:2001:db8::1', /^has no kind$/],
  ['::ffff:203.0.113.7', DEFAULT, 'ip:203.0.113.7', /^has no kind$/],
  ['ip:::ffff:203.0.113.7', DEFAULT, 'ip:203.0.113.7', /not written as checks write it/],
  ['ip:2001:DB8::/56', DEFAULT, 'ip:2001:db8::/56', /not written as checks write it/],
  ['ip:[2001:db8::]/56', DEFAULT, 'ip:2001:db8::/56', /not written as checks write it/],
  ['ip:2001:0db8:0000::/56', DEFAULT, 'ip:2001:db8::/56', /not written as checks write it/],
  ['ip:203.0.113.7/32', DEFAULT, 'ip:203.0.113.7', /not written as checks write it/],
  ['ip:10.0.0.0/8', DEFAULT, undefined, /names a range of addresses/],
  ['10.0.0.0/8', DEFAULT, undefined, /names a range of addresses/],
  ['ip:2001:db8::/32', DEFAULT, undefined, /names a range of addresses/],
  ['ip:203.0.113.07', DEFAULT, undefined, /four decimal parts without leading zeros/],
  ['ip:2001:db8::1/56', DEFAULT, undefined, /bits set past its \/56 prefix: write the network 2001:db8::\/56/],
  ['ip:fe80::1%eth0', DEFAULT, undefined, /zone index/],
])('%s (ipv6Subnet %p): meant %s', (identifier, keyings, meant, why) => {
  expect(identifierMistake(identifier, keyings)).toEqual({ meant, why: expect.stringMatching(why) });
});

test('the identifier meant is the one the adapters derive from that address', () => {
  for (const address of ['2001:db8:0:1::7', '2001:db8:ff:ff::1', '203.0.113.7', '::ffff:198.51.100.9']) {
    for (const keying of [32, 48, 56, 64, false] as const) {
      const meant = identifierMistake(address, [keying])?.meant;
      expect(meant).toBe(`ip:${normaliseIp(address, keying)}`);
      // And the meant one is taken as typed.
      expect(identifierMistake(meant!, [keying])).toBeUndefined();
    }
  }
});
