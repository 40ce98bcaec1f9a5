import { logWarning, RECURRING_WARNING_MS, resetWarnings, resolveWarnings } from '../../src/kernel/warnings';

test('each named warning is logged once per process and can be turned off', () => {
  resetWarnings();
  const lines: string[] = [];
  const logger = { warn: (m: string) => lines.push(m) };
  const all = resolveWarnings(undefined);
  logWarning(logger, all, 'trust-proxy-all', 'a');
  logWarning(logger, all, 'trust-proxy-all', 'b');
  logWarning(logger, resolveWarnings({ 'no-identifier': false }), 'no-identifier', 'c');
  logWarning(logger, resolveWarnings(false), 'forwarded-header-untrusted', 'd');
  expect(lines).toEqual([expect.stringMatching(/^floodgate \[trust-proxy-all\]: a/)]);
});

test('a failed settle is logged again at most once a minute, with how many failed since the last line', () => {
  resetWarnings();
  const lines: string[] = [];
  const logger = { warn: (m: string) => lines.push(m) };
  const all = resolveWarnings(undefined);
  const at = (ms: number, message: string): void => logWarning(logger, all, 'settle-failed', message, ms);
  at(1_000, 'first');
  for (let i = 0; i < 9; i++) at(2_000 + i, 'inside the minute');
  expect(lines).toEqual([expect.stringMatching(/^floodgate \[settle-failed\]: first \(logged at most once a minute/)]);
  at(1_000 + RECURRING_WARNING_MS, 'a minute later');
  expect(lines).toHaveLength(2);
  // The nine not logged and this one.
  expect(lines[1]).toMatch(/^floodgate \[settle-failed\]: a minute later \(10 in the 60 s since the last such warning;/);
  at(1_000 + 3 * RECURRING_WARNING_MS, 'two minutes on');
  expect(lines[2]).toMatch(/two minutes on \(1 in the 120 s since the last such warning;/);
  logWarning(logger, resolveWarnings({ 'settle-failed': false }), 'settle-failed', 'off', 1_000 + 10 * RECURRING_WARNING_MS);
  expect(lines).toHaveLength(3);
});

test('unknown warning names are a ConfigError naming the warning', () => {
  expect(() => resolveWarnings({ 'trust-proxy': false })).toThrow(expect.objectContaining({ option: 'warnings.trust-proxy' }));
  expect(() => resolveWarnings('off')).toThrow(expect.objectContaining({ option: 'warnings' }));
});
