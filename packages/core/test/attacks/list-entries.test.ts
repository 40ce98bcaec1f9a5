import { ConfigError, createLimiter, type LimiterOptions } from '@floodgate/core';
import { closeClients, connect, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';

/*
 * docs/security.md, "List entries that name nobody": an allow or deny entry written in a form the limiter
 * never derives from a request (`0x7f.1`, `fe80::1%eth0`, `IP:1.2.3.4`) used to be kept as an identifier
 * that matched no request, silently. Every entry is now an address in the canonical form a request's
 * address is read in (or a spelling that normalises to it), or an identifier of a kind the limiter knows;
 * anything else is a ConfigError naming the entry, at construction and in setLists().
 */

// The suite's Redis (test/global-setup.ts): an entry that is listed never reaches it; one that is not does.
const redis = connect();
afterAll(closeClients);

const limits = { limit: 100, window: '1m' } as const;
const make = (options: Partial<LimiterOptions> = {}) =>
  createLimiter({ ...TEST_DEADLINE, redis, prefix: uniquePrefix('le'), limits, ...options });

/** [entry, why it is refused]: each is a ConfigError naming `deny[1]` and quoting the entry. */
const REFUSED: readonly [string, string][] = [
  ['0x7f.1', 'hex and short IPv4'],
  ['0x7f.0.0.1', 'a hex part'],
  ['127.1', 'a short IPv4 (127.0.0.1 to inet_aton)'],
  ['2130706433', 'an IPv4 as one integer'],
  ['0177.0.0.1', 'an octal part'],
  ['010.0.0.1', 'a leading zero (octal 8 to some parsers, 10 to others)'],
  ['192.0.2.01', 'a leading zero in the last part'],
  ['[192.0.2.1]', 'brackets around IPv4'],
  ['192.0.2.1:80', 'a port'],
  ['[2001:db8::1]:443', 'a port on IPv6'],
  ['fe80::1%eth0', 'a zone index (an interface, not a client)'],
  ['fe80::1%1', 'a numeric zone index'],
  ['ip:fe80::1%eth0', 'a zone index after ip:'],
  ['IP:192.0.2.1', 'an uppercase kind'],
  ['Ip:192.0.2.1', 'a mixed-case kind'],
  ['USER:admin', 'an uppercase user kind'],
  ['usr:admin', 'a kind the limiter does not know'],
  ['tenant:acme', 'a custom kind not declared'],
  ['admin', 'an identifier with no kind'],
  ['"192.0.2.1"', 'quotes'],
  ['user:', 'a kind with no value'],
  ['ip:', 'ip: with no address'],
  ['::ffff:0:192.0.2.1', 'IPv4-translated (::ffff:0:0/96)'],
  ['::ffff:0:c000:201', 'IPv4-translated, hex'],
  ['::192.0.2.1', 'IPv4-compatible (deprecated ::/96)'],
  ['::c000:201', 'IPv4-compatible, hex'],
  ['::/96', 'the IPv4-compatible range'],
  ['::ffff:0x7f.0.0.1', 'a hex part inside IPv6'],
  ['::ffff:01.2.3.4', 'a leading zero inside IPv6'],
  ['64:ff9b::01.2.3.4', 'a leading zero inside NAT64'],
  ['10.0.0.1/8', 'host bits set (10.0.0.0/8 or 10.0.0.1?)'],
  ['2001:db8::1/32', 'host bits set on IPv6'],
  ['::ffff:10.0.0.1/104', 'host bits set on a mapped range'],
  ['10.0.0.0/08', 'a prefix with a leading zero'],
  ['10.0.0.0/+8', 'a signed prefix'],
  ['a:b:c', 'neither an address nor an identifier'],
];

describe('an entry in a form no request is read in is a ConfigError naming it', () => {
  test.each(REFUSED)('%j (%s)', (entry) => {
    for (const option of ['allow', 'deny'] as const) {
      const attempt = () => make({ [option]: ['user:ok', entry] });
      expect(attempt).toThrow(ConfigError);
      expect(attempt).toThrow(expect.objectContaining({ option: `${option}[1]` }));
      expect(attempt).toThrow(JSON.stringify(entry));
    }
  });

  test.each(REFUSED)('setLists: %j is refused the same way and changes nothing', async (entry) => {
    const l = make({ deny: ['user:b'] });
    expect(() => l.setLists({ deny: ['user:c', entry] })).toThrow(expect.objectContaining({ option: 'deny[1]' }));
    expect((await l.peek('user:b')).reason).toBe('listed');
    expect((await l.peek('user:c')).reason).not.toBe('listed');
    await l.close();
  });

  test('a kind differing only in case names the kind meant', () => {
    expect(() => make({ deny: ['IP:192.0.2.1'] })).toThrow('did you mean "ip:192.0.2.1"?');
    expect(() => make({ deny: ['User:admin'] })).toThrow('did you mean "user:admin"?');
  });
});

/** [entry, identifiers it must match, identifiers it must not]: each accepted spelling, matched exactly. */
const ACCEPTED: readonly [string, string[], string[]][] = [
  ['198.51.100.7', ['ip:198.51.100.7', 'ip:::ffff:198.51.100.7'], ['ip:198.51.100.8', 'user:198.51.100.7']],
  ['ip:198.51.100.7', ['ip:198.51.100.7'], ['ip:198.51.100.70']],
  ['198.51.100.0/24', ['ip:198.51.100.200'], ['ip:198.51.101.1']],
  ['0.0.0.0/0', ['ip:203.0.113.1'], ['ip:2001:db8::1']],
  // IPv4-mapped, in any spelling, is the IPv4 address it carries: as a request's address is.
  ['::ffff:198.51.100.7', ['ip:198.51.100.7'], ['ip:198.51.100.8']],
  ['::FFFF:C633:6407', ['ip:198.51.100.7'], ['ip:198.51.100.8']],
  ['[::ffff:198.51.100.7]', ['ip:198.51.100.7'], ['ip:198.51.100.8']],
  ['::ffff:198.51.100.0/120', ['ip:198.51.100.99'], ['ip:198.51.101.99']],
  // IPv6: case, leading zeros and :: compression are spellings of one address.
  ['2001:DB8::7', ['ip:2001:db8::7'], ['ip:2001:db8::8']],
  ['2001:0db8:0000:0000:0000:0000:0000:0007', ['ip:2001:db8::7'], ['ip:2001:db8::8']],
  ['[2001:db8::7]', ['ip:2001:db8::7'], ['ip:2001:db8::8']],
  ['ip:[2001:db8::7]', ['ip:2001:db8::7'], ['ip:2001:db8::8']],
  ['2001:db8::/32', ['ip:2001:db8:1:200::/56', 'ip:2001:db8::1'], ['ip:2001:db9::/56']],
  ['::1', ['ip:::1'], ['ip:::2', 'ip:127.0.0.1']],
  // NAT64 and 6to4 are IPv6 clients in their own right: an entry names that IPv6 address, not the IPv4 inside.
  ['64:ff9b::198.51.100.7', ['ip:64:ff9b::c633:6407'], ['ip:198.51.100.7']],
  ['64:ff9b::/96', ['ip:64:ff9b::c633:6407'], ['ip:198.51.100.7']],
  ['2002:c633:6407::/48', ['ip:2002:c633:6407:100::/56'], ['ip:198.51.100.7']],
  // Identifiers: exact and case-sensitive.
  ['user:admin', ['user:admin'], ['user:Admin', 'user:admin2']],
  ['user:192.0.2.1', ['user:192.0.2.1'], ['ip:192.0.2.1']],
];

describe('every accepted spelling matches exactly the requests it names', () => {
  test.each(ACCEPTED)('%j', async (entry, hits, misses) => {
    const l = make({ deny: [entry] });
    for (const id of hits) expect([id, (await l.peek(id)).reason]).toEqual([id, 'listed']);
    for (const id of misses) expect([id, (await l.peek(id)).reason]).not.toEqual([id, 'listed']);
    await l.close();
  });

  test('a custom kind is known from identifierKinds, or from a rule scoped to it', async () => {
    const declared = make({ identifierKinds: ['tenant', 'api-key'], deny: ['tenant:acme', 'api-key:k1'] });
    expect((await declared.peek('tenant:acme')).reason).toBe('listed');
    expect((await declared.peek('api-key:k1')).reason).toBe('listed');
    expect((await declared.peek('tenant:Acme')).reason).not.toBe('listed');
    declared.setLists({ allow: ['tenant:ops'] });
    expect((await declared.peek('tenant:ops')).source).toBe('list');
    await declared.close();
    const scoped = make({ limits: [limits, { limit: 5, window: '1m', for: 'account' }], deny: ['account:x'] });
    expect((await scoped.peek('account:x')).reason).toBe('listed');
    await scoped.close();
    // A kind made of hex digits: an entry that is a valid IPv6 address is the address.
    const hex = make({ identifierKinds: ['cafe'], deny: ['cafe:beef', 'cafe::1'] });
    expect((await hex.peek('cafe:beef')).reason).toBe('listed');
    expect((await hex.peek('ip:cafe::1')).reason).toBe('listed');
    expect((await hex.peek('cafe::1')).reason).not.toBe('listed');
    await hex.close();
    const planned = make({ limits: { free: [{ limit: 1, window: '1m', for: 'org' }], pro: [limits] }, allow: ['org:a'] });
    expect((await planned.peek('org:a')).source).toBe('list');
    await planned.close();
  });

  test.each([
    [['Tenant!'], 'identifierKinds[0]'],
    ['tenant', 'identifierKinds'],
    [[''], 'identifierKinds[0]'],
  ])('identifierKinds %j is a ConfigError naming %s', (value, named) => {
    expect(() => make({ identifierKinds: value as never })).toThrow(expect.objectContaining({ option: named }));
  });
});
