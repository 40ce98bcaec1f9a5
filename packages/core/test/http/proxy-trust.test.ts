import { logWarning, resetWarnings, resolveWarnings, type WarningName } from '../../src/kernel/warnings';
import { checkProxyTrust, type TrustReading } from '../../src/http/proxy-trust';
import { webClientAddress } from '../../src/http/web/client-address';

/*
 * The trust-proxy warnings every adapter gives, decided once here (the adapters' tests mount them over
 * real sockets), and the Web-standard client address of Hono and Next.js: X-Forwarded-For as far as
 * trustProxy reaches, read from the right.
 */
const lines: string[] = [];
const warn = (name: WarningName, text: string): void => logWarning({ warn: (m) => void lines.push(m) }, resolveWarnings(true), name, text);
const setting = { name: "Express's 'trust proxy'", fix: 'set it to your proxies' };
beforeEach(() => {
  resetWarnings();
  lines.length = 0;
});

test('a setting that trusts every hop is warned about once, naming the setting and the fix', () => {
  checkProxyTrust(warn, setting, () => ({ forwarded: undefined, trustsAll: true }));
  checkProxyTrust(warn, setting, () => ({ forwarded: '1.1.1.1', trustsAll: true }));
  expect(lines).toEqual([
    expect.stringMatching(/^floodgate \[trust-proxy-all\]: Express's 'trust proxy' trusts every proxy hop.*set it to your proxies/),
  ]);
});

test('an ignored X-Forwarded-For is warned about once, naming its sender; without the header nothing is said', () => {
  checkProxyTrust(warn, setting, () => ({ forwarded: undefined, ignored: true }));
  expect(lines).toEqual([]);
  checkProxyTrust(warn, setting, () => ({ forwarded: '1.1.1.1', ignored: true, peer: '10.0.0.1' }));
  checkProxyTrust(warn, setting, () => ({ forwarded: '2.2.2.2', ignored: true, peer: '10.0.0.1' }));
  expect(lines).toEqual([expect.stringMatching(/^floodgate \[forwarded-header-untrusted\]: X-Forwarded-For arrived from 10\.0\.0\.1/)]);
});

test('a framework that does not say what it trusts has it read off the address it resolved', () => {
  const read =
    (forwarded: string, ip: string): (() => TrustReading) =>
    () => ({ forwarded, ip, peer: '127.0.0.1' });
  // One proxy believed: the address is the entry it wrote, nothing to say.
  checkProxyTrust(warn, setting, read('6.6.6.6, 10.0.0.1', '10.0.0.1'));
  expect(lines).toEqual([]);
  // The socket's address although a header came: the header was ignored.
  checkProxyTrust(warn, setting, read('6.6.6.6', '127.0.0.1'));
  // The leftmost of several entries, which any client writes: every hop is believed.
  checkProxyTrust(warn, setting, read('6.6.6.6, 10.0.0.1', '6.6.6.6'));
  expect(lines.map((l) => /\[(.*?)\]/.exec(l)?.[1])).toEqual(['forwarded-header-untrusted', 'trust-proxy-all']);
});

test('once both warnings were shown, the request is not read again', () => {
  checkProxyTrust(warn, setting, () => ({ forwarded: undefined, trustsAll: true }));
  checkProxyTrust(warn, setting, () => ({ forwarded: '1.1.1.1', ignored: true }));
  const read = jest.fn(() => ({ forwarded: '1.1.1.1', ignored: true }));
  checkProxyTrust(warn, setting, read);
  expect(read).not.toHaveBeenCalled();
  expect(lines).toHaveLength(2);
});

describe('webClientAddress', () => {
  test('no trustProxy: the peer, whatever X-Forwarded-For says, and one warning', () => {
    const client = webClientAddress(undefined)(warn);
    expect(client('192.0.2.1', '6.6.6.6')).toBe('192.0.2.1');
    expect(client('192.0.2.1', '7.7.7.7')).toBe('192.0.2.1');
    expect(client('192.0.2.1', null)).toBe('192.0.2.1');
    expect(lines).toEqual([expect.stringContaining('[forwarded-header-untrusted]: X-Forwarded-For arrived from 192.0.2.1')]);
  });

  test('ranges: hops are read from the right, a forged leftmost entry never wins over an untrusted hop', () => {
    const client = webClientAddress(['loopback', '10.0.0.0/8'])(warn);
    expect(client('127.0.0.1', '6.6.6.6, 203.0.113.5, 10.0.0.2')).toBe('203.0.113.5');
    expect(client('127.0.0.1', ' 10.0.0.3 , 10.0.0.2')).toBe('10.0.0.3');
    expect(client('::ffff:127.0.0.1', '203.0.113.5')).toBe('203.0.113.5');
    expect(client('192.0.2.9', '203.0.113.5')).toBe('192.0.2.9');
    expect(client('127.0.0.1', 'not-an-ip, 203.0.113.5')).toBe('203.0.113.5');
    expect(client('127.0.0.1', 'garbage, 10.0.0.2')).toBe('garbage');
  });

  test('a number of hops: the entry that many proxies in from the peer, never further left', () => {
    const one = webClientAddress(1)(warn);
    expect(one('10.0.0.1', '6.6.6.6, 203.0.113.5')).toBe('203.0.113.5');
    const two = webClientAddress(2)(warn);
    expect(two('10.0.0.1', '6.6.6.6, 203.0.113.5, 10.0.0.2')).toBe('203.0.113.5');
    expect(two('10.0.0.1', '203.0.113.5')).toBe('203.0.113.5');
    expect(webClientAddress(0)(warn)('10.0.0.1', '6.6.6.6')).toBe('10.0.0.1');
    expect(lines).toEqual([expect.stringContaining('[forwarded-header-untrusted]')]);
  });

  test('a range covering every address is warned about when the middleware is made', () => {
    webClientAddress('0.0.0.0/0')(warn);
    expect(lines).toEqual([expect.stringContaining('[trust-proxy-all]: trustProxy trusts every proxy hop')]);
  });

  test.each([
    ['10.0.0.1/8', 'trustProxy'],
    [['loopback', 'nowhere'], 'trustProxy[1]'],
    [-1, 'trustProxy'],
    [1.5, 'trustProxy'],
    [{}, 'trustProxy'],
    ['10.0.0.0/33', 'trustProxy'],
  ])('%j is a ConfigError naming %s', (value, option) => {
    expect(() => webClientAddress(value)).toThrow(expect.objectContaining({ option }));
  });

  test('hops: false refuses a number, naming the option', () => {
    expect(() => webClientAddress(1, { hops: false })).toThrow(
      expect.objectContaining({ option: 'trustProxy', message: expect.stringMatching(/not a number of hops/) }),
    );
  });
});
