import { resetWarnings, resolveWarnings, warnOnce } from '../../src/kernel/warnings';

test('each named warning is logged once per process and can be turned off', () => {
  resetWarnings();
  const lines: string[] = [];
  const logger = { warn: (m: string) => lines.push(m) };
  const all = resolveWarnings(undefined);
  warnOnce(logger, all, 'trust-proxy-all', 'a');
  warnOnce(logger, all, 'trust-proxy-all', 'b');
  warnOnce(logger, resolveWarnings({ 'no-identifier': false }), 'no-identifier', 'c');
  warnOnce(logger, resolveWarnings(false), 'forwarded-header-untrusted', 'd');
  expect(lines).toEqual([expect.stringMatching(/^floodgate \[trust-proxy-all\]: a/)]);
});

test('unknown warning names are a ConfigError naming the warning', () => {
  expect(() => resolveWarnings({ 'trust-proxy': false })).toThrow(expect.objectContaining({ option: 'warnings.trust-proxy' }));
  expect(() => resolveWarnings('off')).toThrow(expect.objectContaining({ option: 'warnings' }));
});
