import { closestName } from '../../src/kernel/closest-name';

test('closestName: the nearest known name within the edits allowed, case-insensitive, the first on a tie', () => {
  const commands = ['inspect', 'block', 'unblock', 'reset', 'blocks', 'top', 'limiters'];
  expect(closestName('inspcet', commands)).toBe('inspect'); // a transposition: two edits
  expect(closestName('BLOCKS', commands)).toBe('blocks');
  expect(closestName('unblok', commands)).toBe('unblock');
  expect(closestName('blok', commands)).toBe('block'); // one edit from block, two from blocks
  expect(closestName('frobnicate', commands)).toBeUndefined();
  expect(closestName('nope', commands)).toBe('top'); // two edits
  expect(closestName('nope', commands, 1)).toBeUndefined();
  expect(closestName('ab', ['ax', 'ay'])).toBe('ax');
  expect(closestName('x', [])).toBeUndefined();
});
