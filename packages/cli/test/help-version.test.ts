import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createLimiter } from '@floodgate/core';
import { registryKey } from '@floodgate/core/admin';
import { closeClients, connect, testRedisUrl, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import { parse } from '../src/args';
import { COMMANDS, OPTIONS, commonExitsOf, generalOptionsOf } from '../src/commands';
import { CLI, floodgate, floodgateBin, sleep } from './helpers';

/*
 * `floodgate <command> --help`, `floodgate help <command>` and `floodgate --version`: what a person types
 * first. None of them connects: the environment points at a port where nothing listens, and a connection
 * attempt would end in exit 3.
 */
afterAll(closeClients);
const NOWHERE = { REDIS_URL: 'redis://127.0.0.1:1' };
const manifest = (pkg: string): { version: string } =>
  JSON.parse(readFileSync(join(__dirname, '..', '..', pkg, 'package.json'), 'utf8')) as { version: string };

describe('floodgate <command> --help', () => {
  test.each(Object.keys(COMMANDS))('%s: usage, what it does, its options with defaults, exit codes, an example; exit 0', async (name) => {
    const spec = COMMANDS[name]!;
    const ran = await floodgate([name, '--help'], NOWHERE);
    expect(ran.code).toBe(0);
    expect(ran.stderr).toBe('');
    const text = ran.stdout;
    expect(text.split('\n')[0]).toBe(`Usage: floodgate ${name} ${spec.synopsis ? `${spec.synopsis} ` : ''}[options]`);
    expect(text).toContain(spec.description);
    // Its own options and the general ones, each with its text; those with a default say it. A command that
    // never connects (script) takes no connection options and cannot end with exits 3 to 5.
    const general = spec.offline ? ['json', 'help', 'version'] : ['url', 'prefix', 'json', 'timeout', 'help', 'version'];
    expect(generalOptionsOf(spec)).toEqual(general);
    for (const option of [...spec.options, ...general]) {
      expect(text).toMatch(new RegExp(`^  ${escape(OPTIONS[option]!.flag)} +${escape(OPTIONS[option]!.text)}$`, 'm'));
    }
    for (const shown of ['(default: $REDIS_URL, else redis://127.0.0.1:6379)', '(default: floodgate)', '(default: 3000)']) {
      if (spec.offline) expect(text).not.toContain(shown);
      else expect(text).toContain(shown);
    }
    for (const option of Object.keys(OPTIONS).filter((o) => !spec.options.includes(o) && !general.includes(o)))
      expect(text).not.toContain(OPTIONS[option]!.flag);
    const exits = text.slice(text.indexOf('Exit codes:\n')).split('\n\n')[0]!.split('\n').slice(1);
    const common = spec.offline ? [2] : [2, 3, 4, 5];
    expect(commonExitsOf(spec).map(([c]) => c)).toEqual(common);
    expect(exits.map((l) => Number(/^ {2}(\d) {2}\S/.exec(l)?.[1]))).toEqual([...spec.exits.map(([c]) => c), ...common]);
    const example = /\nExample:\n {2}(floodgate .*)\n?$/.exec(text)?.[1];
    expect(example).toBe(spec.example);
    // The example is a valid command line: it parses (quotes as a shell would take them).
    const words = [...example!.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!).slice(1);
    expect(parse(words, {}).command).toBe(name);
    // `floodgate help <command>` says the same; so does -h, even where the arguments are incomplete.
    expect(await floodgate(['help', name], NOWHERE)).toMatchObject({ code: 0, stdout: text, stderr: '' });
    expect(await floodgate([name, '-h'], NOWHERE)).toMatchObject({ code: 0, stdout: text });
  });

  test('with a broken command line around it (a missing --for, an unknown option) it still answers', async () => {
    const block = (await floodgate(['block', '--help'], NOWHERE)).stdout;
    expect(block).toMatch(/^Usage: floodgate block <identifier> --for <duration>/);
    expect(await floodgate(['block', 'ip:1', '--bogus', '--help'], NOWHERE)).toMatchObject({ code: 0, stdout: block });
  });

  test('floodgate --help lists every command and says that each has its own help', async () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      const ran = await floodgate(args, NOWHERE);
      expect(ran.code).toBe(0);
      expect(ran.stdout).toMatch(/^Usage: floodgate <command> \[options\]/);
      for (const name of Object.keys(COMMANDS)) expect(ran.stdout).toMatch(new RegExp(`^  ${name}\\b.*\\S$`, 'm'));
      expect(ran.stdout).toContain('floodgate <command> --help (or floodgate help <command>)');
      expect(ran.stdout).toMatch(/^ {2}-v, --version +/m);
    }
  });

  test('help for a command that does not exist: exit 2, with the command that was meant', async () => {
    for (const args of [
      ['help', 'inspcet'],
      ['inspcet', '--help'],
    ]) {
      const ran = await floodgate(args, NOWHERE);
      expect(ran.code).toBe(2);
      expect(ran.stdout).toBe('');
      expect(ran.stderr).toBe("floodgate: unknown command 'inspcet'; did you mean 'inspect'? (see floodgate --help)\n");
    }
  });
});

describe('floodgate --version', () => {
  const cli = manifest('cli').version;
  const core = manifest('core').version;
  const text = `@floodgate/cli ${cli}\n@floodgate/core ${core} (reads the keys of applications on @floodgate/core ${core.split('.')[0]}.x)\n`;

  test('--version and -v: the CLI and the core it reads keys of, from their package.json; exit 0 without connecting', async () => {
    for (const flag of ['--version', '-v']) expect(await floodgate([flag], NOWHERE)).toMatchObject({ code: 0, stdout: text, stderr: '' });
    expect(await floodgate(['inspect', '--version'], NOWHERE)).toMatchObject({ code: 0, stdout: text });
    const json = await floodgate(['--version', '--json'], NOWHERE);
    expect(JSON.parse(json.stdout)).toEqual({ cli, core });
  });

  test('the built bin, and the ESM build, find both package.json files from dist/', async () => {
    expect(await floodgateBin(['--version'])).toMatchObject({ code: 0, stdout: text, stderr: '' });
    const esm = join(__dirname, '..', 'dist', 'index.mjs');
    const script = `import { run } from ${JSON.stringify(esm)}; process.exitCode = await run(['--version', '--json']);`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(JSON.parse(stdout)).toEqual({ cli, core });
    expect(CLI).toMatch(/dist[\\/]cli\.js$/);
  });
});

describe('an IP address without a kind, after --, is the identifier as typed', () => {
  test('inspect -- 203.0.113.7 reads the state of a limiter that checks bare addresses', async () => {
    const url = testRedisUrl();
    const redis = connect(url);
    const prefix = uniquePrefix('bare');
    const app = createLimiter({
      ...TEST_DEADLINE,
      redis,
      prefix,
      name: 'raw',
      limits: { limit: 5, window: '1m' },
      logger: { warn: () => undefined },
    });
    try {
      await app.check('203.0.113.7');
      for (let i = 0; i < 100 && !(await redis.hexists(registryKey(prefix), 'raw')); i++) await sleep(20);
      const refused = await floodgate(['inspect', '203.0.113.7', '--url', url, '--prefix', prefix]);
      expect(refused.code).toBe(2);
      const ran = await floodgate(['inspect', '--url', url, '--prefix', prefix, '--', '203.0.113.7']);
      expect(ran.code).toBe(0);
      expect(ran.stdout).toMatch(/^raw\s+-\s+5 per 1m\s+4\/5\s/m);
    } finally {
      await app.close();
    }
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
