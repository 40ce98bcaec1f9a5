import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { limiterScript } from '@floodgate/core/admin';
import type { LimiterOptions } from '@floodgate/core';
import { OPTIONS } from '../src/commands';
import { floodgate } from './helpers';

/*
 * `floodgate script`: the Lua a limiter sends, printed without Redis. Each golden file of core
 * (packages/core/src/scripts/golden, whose test ties it to what a limiter with its options loads) names
 * the `floodgate script` command that prints it; that command must print exactly the file's script. Nothing
 * here has a Redis to reach: REDIS_URL points where nothing listens, and a connection would be exit 3.
 */
const NOWHERE = { REDIS_URL: 'redis://127.0.0.1:1' };
const GOLDEN = join(__dirname, '..', '..', 'core', 'src', 'scripts', 'golden');
const HEADER_END = '\n\n';

const goldens = readdirSync(GOLDEN, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.lua'));

/** The golden file's command (`--   npx floodgate script ...`) as arguments, quotes taken as a shell would. */
function commandOf(text: string): string[] {
  const line = /^-- {3}npx floodgate (script .*)$/m.exec(text.slice(0, text.indexOf(HEADER_END)))?.[1];
  if (line === undefined) throw new Error('the golden file names no `npx floodgate script` command');
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

const run = (args: string[]) => floodgate(args, NOWHERE);
const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');

test('the golden files are there to compare with (4 algorithms, 7 cases each; units for the three hash algorithms, settle for all four)', () => {
  expect(goldens.length).toBe(28 + 3 + 4);
});

test.each(goldens)('%s: its `floodgate script` line prints exactly its script', async (file) => {
  const text = readFileSync(join(GOLDEN, file), 'utf8');
  const body = text.slice(text.indexOf(HEADER_END) + HEADER_END.length);
  const ran = await run(commandOf(text));
  expect(ran.stderr).toBe('');
  expect(ran.code).toBe(0);
  expect(ran.stdout).toBe(body);
  // --json: the same script, with the SHA1 a limiter's EVALSHA names it by.
  const json = JSON.parse((await run([...commandOf(text), '--json'])).stdout) as { sha1: string; lines: number; lua: string };
  expect(json).toEqual({ sha1: sha1(body), lines: body.split('\n').length - 1, lua: body });
});

describe('every flag is the limiter option it names', () => {
  const same = async (args: string[], options: LimiterOptions, script?: 'batch' | 'split'): Promise<string> => {
    const ran = await run(['script', ...args]);
    expect(ran).toMatchObject({ code: 0, stderr: '' });
    expect(ran.stdout).toBe(limiterScript(options, { script }));
    return ran.stdout;
  };

  test('burst and precision, for and a window in ms', async () => {
    const burst = await same(['--algorithm', 'token-bucket', '--limits', '100/1m burst 150'], {
      algorithm: 'token-bucket',
      limits: { limit: 100, window: '1m', burst: 150 },
    });
    expect(burst).not.toBe(limiterScript({ algorithm: 'token-bucket', limits: { limit: 100, window: '1m' } }));
    const precision = await same(['--limits', '60/1m precision 6, 5/1500 for user'], {
      limits: [
        { limit: 60, window: '1m', precision: 6 },
        { limit: 5, window: 1500, for: 'user' },
      ],
    });
    expect(precision).not.toBe(
      limiterScript({
        limits: [
          { limit: 60, window: '1m' },
          { limit: 5, window: 1500, for: 'user' },
        ],
      }),
    );
  });

  test('every lockout key, in ms or durations; refunds with the batch and split scripts', async () => {
    const lockout = { after: 3, within: 60_000, duration: '10s', backoff: 2, maxDuration: '1h', scope: ['ip', 'user'] };
    const flag = 'after=3,within=60000,duration=10s,backoff=2,maxDuration=1h,scope=ip+user';
    await same(['--limits', '10/1m', '--lockout', flag], { limits: { limit: 10, window: '1m' }, lockout });
    const options = { algorithm: 'sliding-log', limits: { limit: 10, window: '1m' }, lockout, refunds: true } as const;
    const args = ['--algorithm', 'sliding-log', '--limits', '10/1m', '--lockout', flag, '--refunds'];
    const batch = await same([...args, '--batch'], options, 'batch');
    expect(batch).not.toBe(limiterScript({ ...options, refunds: false }, { script: 'batch' }));
    await same([...args, '--split'], options, 'split');
  });

  test('--algorithm names every algorithm core has, and only those', async () => {
    const named = OPTIONS.algorithm!.text.replace(/ \(default: .*$/, '').split(/, | or /);
    for (const algorithm of named)
      await same(['--algorithm', algorithm, '--limits', '10/1m'], { algorithm, limits: { limit: 10, window: '1m' } } as LimiterOptions);
    const ran = await run(['script', '--algorithm', 'leaky-bucket', '--limits', '10/1m']);
    expect(ran.code).toBe(2);
    const known = /must be one of (.*); got/
      .exec(ran.stderr)?.[1]
      ?.split(', ')
      .map((n) => n.slice(1, -1));
    expect(known?.sort()).toEqual([...named].sort());
    // The default the help gives is core's.
    expect(OPTIONS.algorithm!.text).toContain('(default: sliding-window)');
    expect((await run(['script', '--limits', '1/1s'])).stdout).toContain('\n-- Floodgate sliding-window (');
  });
});

describe('what a limiter would refuse is a usage error (exit 2) naming the flag, before any connection', () => {
  test.each([
    [['--limits', '10/1x'], "--limits rule 1 ('10/1x'): window must be a positive whole number of milliseconds"],
    [['--limits', '10/1m, 0/1h'], "--limits rule 2 ('0/1h'): limit must be a positive integer"],
    [['--limits', '10/1m fro user'], "--limits rule 1 ('10/1m fro user'): 'fro' is not one of for, burst, precision"],
    [['--limits', '10/1m for'], "--limits rule 1 ('10/1m for'): 'for' needs a value"],
    [['--limits', '10/1m for a for b'], "--limits rule 1 ('10/1m for a for b') gives 'for' twice"],
    [['--limits', '10/1m,'], "--limits rule 2 ('') is not a rule: <limit>/<window>"],
    [['--limits', '10 per minute'], "--limits rule 1 ('10 per minute') is not a rule"],
    [
      ['--limits', '10/1m burst 5', '--algorithm', 'fixed-window'],
      "--limits rule 1 ('10/1m burst 5'): burst applies only to algorithm 'token-bucket'",
    ],
    [['--limits', '10/1m', '--algorithm', 'fixed'], "--algorithm must be one of 'sliding-window', 'fixed-window'"],
    [['--limits', '10/1m', '--lockout', 'after=5,within=15m,scope=ip'], '--lockout duration must be a positive whole number'],
    [
      ['--limits', '10/1m', '--lockout', 'after=5,within=15m,duration=1h,maxDuration=1m,scope=ip'],
      '--lockout maxDuration must be at least lockout.duration',
    ],
    [['--limits', '10/1m', '--lockout', 'after=5,within=15m,duration=1h,scope=ip+tenant'], "--lockout scope names 'tenant', a kind no"],
    [
      ['--limits', '10/1m', '--lockout', 'after'],
      `--lockout takes key=value pairs such as after=5,within=15m,duration=1h,scope=ip; got 'after'`,
    ],
    [
      ['--limits', '10/1m', '--lockout', 'after=5,within=1m,duration=1h,scope=ip,afterr=2'],
      '--lockout afterr is not a Floodgate option; did you mean `after`?',
    ],
    [['--limits', '10/1m', '--batch', '--split'], 'script prints one script: --batch or --split, not both'],
    [[], 'script needs --limits <rules>'],
    [['--limit', '10'], 'script has no option --limit; it is an option of top; did you mean --limits?'],
    [['--limits', '10/1m', '--url', 'redis://127.0.0.1:6379'], 'script has no option --url: it connects to nothing'],
    [['--limits', '10/1m', '--timeout', '5'], 'script has no option --timeout: it connects to nothing'],
    [['--limits', '10/1m', '--for', '1h'], 'script has no option --for; it is an option of block'],
  ])('script %j', async (args, message) => {
    const ran = await run(['script', ...args]);
    expect(ran).toMatchObject({ code: 2, stdout: '' });
    expect(ran.stderr).toContain(`floodgate: ${message}`);
    expect(ran.stderr).toMatch(/\(see floodgate script --help\)\n$/);
  });

  test('under --json, the error is JSON too', async () => {
    const ran = await run(['script', '--limits', '10/1x', '--json']);
    expect(ran.code).toBe(2);
    expect(JSON.parse(ran.stderr)).toMatchObject({
      error: { code: 'usage', exit: 2, message: expect.stringContaining("--limits rule 1 ('10/1x')") },
    });
  });
});
