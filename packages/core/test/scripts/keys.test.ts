import { blockKey, encodeIdentifier, identifierKind, stateKey } from '../../src/scripts/keys';

test('plain short identifiers stay readable', () => {
  expect(encodeIdentifier('ip:203.0.113.7')).toBe('ip:203.0.113.7');
  expect(encodeIdentifier('user:42')).toBe('user:42');
  expect(encodeIdentifier('ip:2001:db8::/56')).toBe('ip:2001:db8::/56');
});

test('anything else is hashed, behind a # that no raw identifier contains', () => {
  const hostile = ['a{b}c', 'x}', '{', 'a b', 'a\u0000b', '😀', 'é', 'x'.repeat(65), 'x'.repeat(10_000), '#abc'];
  for (const id of hostile) {
    const enc = encodeIdentifier(id);
    expect(enc).toMatch(/^#[A-Za-z0-9_-]{22}$/);
  }
});

test('the encoding is injective, even for lone surrogates that UTF-8 would merge', () => {
  const ids = ['\ud800', '\ud801', '\udfff', '\ufffd', 'a\u0000', 'a', 'A', 'a{', 'a}', '😀', '\ud83d\ude00x'];
  const encoded = new Set(ids.map(encodeIdentifier));
  expect(encoded.size).toBe(ids.length);
});

test('keys keep the identifier inside its hash tag and stay under 200 bytes', () => {
  const enc = encodeIdentifier('}{'.repeat(5000));
  const key = stateKey('p'.repeat(32), 'n'.repeat(48), 'fw1', enc);
  expect(Buffer.byteLength(key)).toBeLessThanOrEqual(200);
  expect(key.indexOf('{')).toBe(key.lastIndexOf('{'));
  expect(blockKey('floodgate', 'ip:1.2.3.4')).toBe('floodgate:!b:{ip:1.2.3.4}');
  expect(Buffer.byteLength(stateKey('p'.repeat(32), 'n'.repeat(48), 'fw1', 'x'.repeat(64)))).toBeLessThanOrEqual(200);
});

test('identifierKind is the part before the first colon', () => {
  expect(identifierKind('user:42:x')).toBe('user');
  expect(identifierKind('plain')).toBe('');
});
