import { formatWindow, parseDuration, resolveRules } from '../../src/config/rules';

test.each([
  ['500ms', 500],
  ['1s', 1000],
  ['10s', 10_000],
  ['1m', 60_000],
  ['2h', 7_200_000],
  ['1d', 86_400_000],
  [250, 250],
])('parseDuration(%p) = %p', (input, ms) => {
  expect(parseDuration(input, 'window')).toBe(ms);
});

test.each([['1'], ['s'], ['-1s'], ['1w'], [' 1s'], [0], [-5], [1.5], [NaN], [null], ['400d']])('parseDuration(%p) throws', (input) => {
  expect(() => parseDuration(input, 'window')).toThrow(/`window`/);
});

test('rules resolve with defaults', () => {
  expect(resolveRules({ limit: 3, window: '1m' })).toEqual([{ limit: 3, windowMs: 60_000, for: undefined, burst: 3, precision: 10 }]);
  expect(resolveRules([{ limit: 3, window: '1m', for: 'user', burst: 5, precision: 6 }])[0]).toMatchObject({
    for: 'user',
    burst: 5,
    precision: 6,
  });
});

test('formatWindow prints the largest whole unit', () => {
  expect([1000, 60_000, 3_600_000, 86_400_000, 1500, 90_000].map(formatWindow)).toEqual(['1s', '1m', '1h', '1d', '1500ms', '90s']);
});
