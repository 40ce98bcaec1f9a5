import { parse } from '../src/args';
import { floodgate } from './helpers';

/*
 * The usual slips get a usage error (exit 2, before connecting: the environment points where nothing
 * listens) that says what was probably meant.
 */
const NOWHERE = { REDIS_URL: 'redis://127.0.0.1:1' };

async function usageError(args: string[]): Promise<string> {
  const ran = await floodgate(args, NOWHERE);
  expect({ args, code: ran.code, stdout: ran.stdout }).toEqual({ args, code: 2, stdout: '' });
  expect(ran.stderr.split('\n')).toHaveLength(2);
  return ran.stderr.replace(/^floodgate: /, '').trimEnd();
}

test.each([
  ['inspcet', "unknown command 'inspcet'; did you mean 'inspect'? (see floodgate --help)"],
  ['blcoks', "unknown command 'blcoks'; did you mean 'blocks'? (see floodgate --help)"],
  ['limters', "unknown command 'limters'; did you mean 'limiters'? (see floodgate --help)"],
  ['rest', "unknown command 'rest'; did you mean 'reset'? (see floodgate --help)"],
  // A short word gets one edit at most: `nope` is two from `top`.
  ['nope', "unknown command 'nope' (see floodgate --help)"],
  ['frobnicate', "unknown command 'frobnicate' (see floodgate --help)"],
  // An identifier where the command goes.
  ['ip:203.0.113.7', "unknown command 'ip:203.0.113.7'; did you mean 'floodgate inspect ip:203.0.113.7'?"],
])('an unknown command %j: the command it is closest to', async (command, message) => {
  expect(await usageError([command])).toBe(message);
});

test.each([
  [['top', '--minute', '5'], "unknown option '--minute'; did you mean --minutes? (see floodgate top --help)"],
  [['block', 'user:1', '--for', '1m', '--reson', 'x'], "unknown option '--reson'; did you mean --reason? (see floodgate block --help)"],
  [['blocks', '--prefx', 'app'], "unknown option '--prefx'; did you mean --prefix? (see floodgate blocks --help)"],
  [['blocks', '--jsn'], "unknown option '--jsn'; did you mean --json? (see floodgate blocks --help)"],
  [['blocks', '--bogus'], "unknown option '--bogus' (see floodgate blocks --help)"],
  [['blocks', '-x'], "unknown option '-x' (see floodgate blocks --help)"],
  // An option of another command: which one it belongs to.
  [['blocks', '--reason', 'x'], 'blocks has no option --reason; it is an option of block (see floodgate blocks --help)'],
  [['inspect', 'ip:1', '--minutes', '5'], 'inspect has no option --minutes; it is an option of top (see floodgate inspect --help)'],
])('an unknown option %j: the option it is closest to', async (args, message) => {
  expect(await usageError(args)).toBe(message);
});

test.each([
  ['inspect', 'floodgate inspect ip:203.0.113.7'],
  ['block', 'floodgate block ip:203.0.113.7 --for 10m'],
  ['unblock', 'floodgate unblock ip:203.0.113.7'],
  ['reset', 'floodgate reset ip:203.0.113.7'],
])('%s without an identifier: what one looks like', async (command, example) => {
  const extra = command === 'block' ? ['--for', '10m'] : [];
  expect(await usageError([command, ...extra])).toBe(
    `${command} needs an identifier (kind:value), e.g. ${example} (see floodgate ${command} --help)`,
  );
});

test('block with its duration where --for goes: the command meant', async () => {
  expect(await usageError(['block', 'user:42', '10m'])).toBe(
    "block takes one identifier; got 2: 'user:42' '10m'; did you mean 'floodgate block user:42 --for 10m'?",
  );
  expect(await usageError(['inspect', 'user:a', 'b'])).toBe(
    "inspect takes one identifier; got 2: 'user:a' 'b' (quote an identifier that holds spaces) (see floodgate inspect --help)",
  );
});

describe('an IP address without a kind: the identifier the adapters would have made of it', () => {
  test.each([
    ['203.0.113.7', 'ip:203.0.113.7'],
    ['2001:db8:0:1::7', 'ip:2001:db8::/56'], // IPv6 is grouped per /56 by default
    ['::ffff:203.0.113.7', 'ip:203.0.113.7'],
  ])('%s: did you mean %s?', async (address, meant) => {
    for (const command of ['inspect', 'block', 'unblock', 'reset']) {
      const extra = command === 'block' ? ['--for', '10m'] : [];
      expect(await usageError([command, address, ...extra])).toBe(
        `'${address}' has no kind: did you mean ${meant}? (an identifier that really has none goes after --: floodgate ${command} -- ${address})`,
      );
    }
  });

  test('after --, or anything that is not an IP address, is taken as typed', () => {
    expect(parse(['inspect', '--', '203.0.113.7'], {}).identifier).toBe('203.0.113.7');
    expect(parse(['block', '--for', '1m', '--', '2001:db8::7'], {}).identifier).toBe('2001:db8::7');
    expect(parse(['inspect', 'alice'], {}).identifier).toBe('alice');
    expect(parse(['inspect', '203.0.113.7:443'], {}).identifier).toBe('203.0.113.7:443');
    expect(parse(['inspect', 'ip:203.0.113.7'], {}).identifier).toBe('ip:203.0.113.7');
  });
});

test('what a hint quotes is escaped like every other message', async () => {
  const message = await usageError(['inspc\x1b[2J\u202e']);
  expect(message).toBe("unknown command 'inspc\\x1b[2J\\u202e' (see floodgate --help)");
});
