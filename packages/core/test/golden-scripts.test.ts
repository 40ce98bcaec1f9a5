import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createLimiter, type AlgorithmName, type LimiterOptions } from '@floodgate/core';
import { limiterScript, type LimiterScriptKind } from '@floodgate/core/admin';
import { closeClients, connect, spawnRedis, uniquePrefix, type RedisProcess, TEST_DEADLINE } from '@floodgate/testing';

/*
 * The golden copies of the generated scripts (packages/core/src/scripts/golden/<algorithm>/<case>.lua):
 * per algorithm, the script a limiter sends to Redis for a few rule sets, as sent, so that the Lua Redis runs
 * can be read (and reviewed in a diff) without writing code. This test fails when core generates anything
 * else; FLOODGATE_UPDATE_GOLDEN=1 rewrites them. Every golden file is also a program Redis accepts (SCRIPT
 * LOAD), and is the very script a limiter with the file's options loads on a fresh redis-server.
 * packages/cli/test/script.test.ts runs each file's `floodgate script` line and compares its output.
 */
const ROOT = join(__dirname, '..', '..', '..');
const GOLDEN = join(__dirname, '..', 'src', 'scripts', 'golden');
const UPDATE = process.env.FLOODGATE_UPDATE_GOLDEN === '1';
const REGENERATE = 'FLOODGATE_UPDATE_GOLDEN=1 npx jest packages/core/test/golden-scripts.test.ts';
const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'];

interface Case {
  /** The file's name, without .lua. */
  name: string;
  /** What the file shows, for its header. */
  what: string;
  options: Omit<LimiterOptions, 'algorithm'>;
  script?: Exclude<LimiterScriptKind, 'check'>;
  /** The `floodgate script` flags that print it, after --algorithm. */
  flags: string;
  /** The algorithms it is made for (default: all; sliding-log counts one unit). */
  algorithms?: readonly AlgorithmName[];
}

const ONE = { limit: 10, window: '1m' };
const CASES: Case[] = [
  { name: 'one-rule', what: 'one rule', options: { limits: ONE }, flags: '--limits 10/1m' },
  {
    name: 'three-rules',
    what: "three rules on two identifier kinds (two for every identifier, one for 'user')",
    options: {
      limits: [
        { limit: 20, window: '10s' },
        { limit: 500, window: '1h' },
        { limit: 100, window: '1h', for: 'user' },
      ],
    },
    flags: "--limits '20/10s, 500/1h, 100/1h for user'",
  },
  {
    name: 'lockout',
    what: 'one rule and a lockout (its step runs after the commit)',
    options: { limits: ONE, lockout: { after: 5, within: '15m', duration: '15m', scope: 'ip' } },
    flags: '--limits 10/1m --lockout after=5,within=15m,duration=15m,scope=ip',
  },
  {
    name: 'refundable',
    what: 'one rule, refunds: true: the refundable script, which answers undo receipts',
    options: { limits: ONE, refunds: true },
    flags: '--limits 10/1m --refunds',
  },
  {
    name: 'batch',
    what: "one rule: the batch script, the check script wrapped to run a turn's checks in one call",
    options: { limits: ONE },
    script: 'batch',
    flags: '--limits 10/1m --batch',
  },
  {
    name: 'split',
    what: 'one rule: the split script a Redis Cluster slot runs for a check whose identifiers span slots',
    options: { limits: ONE },
    script: 'split',
    flags: '--limits 10/1m --split',
  },
  {
    name: 'units',
    what: 'two rules counting two units (requests and tokens): a cost per unit in ARGV[2]',
    options: {
      limits: [
        { limit: 60, window: '1m' },
        { limit: 10000, window: '1m', unit: 'tokens' },
      ],
    },
    flags: "--limits '60/1m, 10000/1m unit tokens'",
    algorithms: ['fixed-window', 'sliding-window', 'token-bucket'],
  },
  {
    name: 'settle',
    what: 'one rule of tokens, refunds: true: the settle script of a reservation (give back part, charge past)',
    options: { limits: { limit: 1000, window: '1m', unit: 'tokens' }, refunds: true },
    script: 'settle',
    flags: "--limits '1000/1m unit tokens' --refunds --settle",
  },
  {
    name: 'shared-shape',
    what: 'eight rules on three identifier kinds: the shared shape, a function per rule and field',
    options: {
      limits: [
        { limit: 10, window: '1s' },
        { limit: 100, window: '1m' },
        { limit: 500, window: '1h' },
        { limit: 1000, window: '1d' },
        { limit: 50, window: '1m', for: 'user' },
        { limit: 200, window: '1h', for: 'user' },
        { limit: 50, window: '1m', for: 'key' },
        { limit: 200, window: '1h', for: 'key' },
      ],
    },
    flags: "--limits '10/1s, 100/1m, 500/1h, 1000/1d, 50/1m for user, 200/1h for user, 50/1m for key, 200/1h for key'",
  },
];

/** An options value as TypeScript source: { limit: 10, window: '1m' }. */
function literal(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`;
  if (typeof value === 'object' && value !== null)
    return `{ ${Object.entries(value)
      .map(([k, v]) => `${k}: ${literal(v)}`)
      .join(', ')} }`;
  return typeof value === 'string' ? `'${value}'` : String(value);
}

const HEADER_LINES = 10;

/** The golden file: a header saying what it is and how it is made, a blank line, the script as sent. */
function goldenText(algorithm: AlgorithmName, c: Case, lua: string): string {
  const call = `limiterScript(${literal({ algorithm, ...c.options })}${c.script ? `, { script: '${c.script}' }` : ''})`;
  const header = [
    `Golden copy, generated: ${algorithm}, ${c.what}.`,
    `The script as a limiter sends it to Redis (EVALSHA ${createHash('sha1').update(lua).digest('hex')}); from @floodgate/core/admin:`,
    `  ${call}`,
    'or from the command line:',
    `  npx floodgate script --algorithm ${algorithm} ${c.flags}`,
    'packages/core/test/golden-scripts.test.ts fails when core generates anything else. After a deliberate',
    'change, regenerate every golden file, and review their diff:',
    `  ${REGENERATE}`,
    `A Redis error at user_script:N is at line N + ${HEADER_LINES} of this file.`,
  ].map((l) => `-- ${l}`);
  expect(header.length + 1).toBe(HEADER_LINES);
  return `${header.join('\n')}\n\n${lua}`;
}

const fileOf = (algorithm: AlgorithmName, c: Case): string => join(GOLDEN, algorithm, `${c.name}.lua`);
const rel = (file: string): string => relative(ROOT, file);

/** Where two golden texts first differ, as a line of each: in the script, else in the header's SHA1 line. */
function firstDifference(expected: string, actual: string): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  const differs = (i: number): boolean => a[i] !== b[i];
  const n = Math.max(a.length, b.length);
  let i = 0;
  while (i < n && (i === 1 || !differs(i))) i++;
  if (i === n) i = 1;
  const show = (line: string | undefined): string => (line === undefined ? '(end of file)' : JSON.stringify(line));
  return `first difference at line ${i + 1}:\n  golden file:    ${show(a[i])}\n  core generates: ${show(b[i])}`;
}

afterAll(closeClients);

const casesOf = (algorithm: AlgorithmName): Case[] => CASES.filter((c) => c.algorithms?.includes(algorithm) ?? true);
const ALL = ALGORITHMS.flatMap((algorithm) => casesOf(algorithm).map((c) => ({ algorithm, c, file: fileOf(algorithm, c) })));

describe.each(ALGORITHMS)('%s', (algorithm) => {
  test.each(casesOf(algorithm).map((c) => [c.name, c] as const))('%s.lua is the script core generates', (_name, c) => {
    const file = fileOf(algorithm, c);
    const text = goldenText(algorithm, c, limiterScript({ algorithm, ...c.options } as LimiterOptions, { script: c.script }));
    if (UPDATE) {
      mkdirSync(join(GOLDEN, algorithm), { recursive: true });
      if (!existsSync(file) || readFileSync(file, 'utf8') !== text) writeFileSync(file, text);
    }
    if (!existsSync(file)) throw new Error(`${rel(file)} is missing. Generate it: ${REGENERATE}`);
    const golden = readFileSync(file, 'utf8');
    if (golden !== text) {
      throw new Error(
        `${rel(file)} is not the script core generates now; ${firstDifference(golden, text)}\n` +
          `If the change is deliberate, regenerate the golden files and review their diff: ${REGENERATE}`,
      );
    }
  });
});

test('the golden folder holds only the golden files of the cases here', () => {
  const expected = new Set(ALL.map(({ file }) => rel(file)));
  const found = readdirSync(GOLDEN, { recursive: true, encoding: 'utf8' })
    .map((f) => join(GOLDEN, f))
    .filter((f) => f.endsWith('.lua'))
    .map(rel);
  const stray = found.filter((f) => !expected.has(f));
  if (UPDATE) for (const f of stray) rmSync(join(ROOT, f));
  else if (stray.length > 0)
    throw new Error(`no case of golden-scripts.test.ts makes ${stray.join(', ')}: remove it, or run ${REGENERATE}`);
  expect(found.filter((f) => !stray.includes(f)).sort()).toEqual([...expected].sort());
});

describe('every golden file is a program Redis runs', () => {
  const redis = connect();
  test.each(ALL.map(({ algorithm, c, file }) => [`${algorithm}/${c.name}.lua`, file] as const))(
    '%s: SCRIPT LOAD accepts it, header and all',
    async (_name, file) => {
      const text = readFileSync(file, 'utf8');
      const sha = await redis.script('LOAD', text);
      expect(sha).toBe(createHash('sha1').update(text).digest('hex'));
    },
  );
});

/*
 * On a redis-server of its own, whose script cache holds nothing else: a limiter with the file's options
 * loads exactly the script below the file's header (by SHA1) with its first check. The batch script needs three
 * checks in one turn (the first leaves alone, its store having nothing in flight: stores/turn-batches.ts); the settle script a reservation's settle; the split script needs a Cluster and a check spanning slots (Program.split, the same
 * text ClusterStore sends), and is left to the SCRIPT LOAD above.
 */
describe('a limiter with the options in the header sends exactly the script below it', () => {
  let server: RedisProcess | undefined;
  let client: ReturnType<typeof connect>;
  beforeAll(async () => {
    server = await spawnRedis();
    client = connect(server.url);
  });
  afterAll(() => server?.stop());

  const sent = ALL.filter(({ c }) => c.script !== 'split');
  test.each(sent.map(({ algorithm, c, file }) => [`${algorithm}/${c.name}.lua`, algorithm, c, file] as const))(
    '%s',
    async (_name, algorithm, c, file) => {
      const body = readFileSync(file, 'utf8').split('\n').slice(HEADER_LINES).join('\n');
      const sha = createHash('sha1').update(body).digest('hex');
      await client.script('FLUSH');
      expect(await client.script('EXISTS', sha)).toEqual([0]);
      const limiter = createLimiter({
        ...TEST_DEADLINE,
        redis: client,
        prefix: uniquePrefix('golden'),
        algorithm,
        failure: 'closed',
        blockCache: false,
        logger: { warn: () => undefined },
        ...c.options,
      } as LimiterOptions);
      try {
        // The settle script: a reservation settled below its estimate.
        if (c.script === 'settle') expect(await (await limiter.reserve('user:a', { cost: 2 })).settle(1)).toBe(true);
        const ids = c.script === 'batch' ? ['user:a', 'user:b', 'user:c'] : ['user:a'];
        const decisions = await Promise.all(ids.map((id) => limiter.check(id)));
        expect(decisions.map((d) => [d.allowed, d.source])).toEqual(ids.map(() => [true, 'redis']));
      } finally {
        await limiter.close();
      }
      expect(await client.script('EXISTS', sha)).toEqual([1]);
    },
  );
});
