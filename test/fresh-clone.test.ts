import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Redis from 'ioredis';
import { createLimiter } from '@floodgate/core';
import { freePort, startRedis } from '@floodgate/testing';

/*
 * A new user's first hour, on a fresh clone of this repository's HEAD: the README's set-up commands as
 * written (its first `sh` block with `npm start`: every command but `npm test`, which is this suite), then,
 * before `npm start` builds anything, `npm run typecheck`; then, against the running example, the CLI
 * transcript (every `$ npx floodgate ...` line of README.md or docs/cli.md: the same header and the same
 * identifiers in each row, times and counts masked). Nothing is taken from this checkout's node_modules or dist.
 */
const root = join(__dirname, '..');
const exec = promisify(execFile);
const MINUTE = 60_000;
/**
 * A hang guard, not a bound: how long npm takes to install is not a property of this repository, and a
 * busy machine made `npm ci` outlast a 4-minute timeout (the error said only "Command failed: npm ci").
 */
const HANG = 20 * MINUTE;

/** Runs a command; a failure says how it ended (its exit code, or the guard's signal) and the end of its output. */
async function run(cmd: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeout: number }) {
  try {
    return await exec(cmd, args, { ...options, maxBuffer: 64 * 1024 * 1024 });
  } catch (e) {
    const err = e as { code?: number; signal?: string; killed?: boolean; stdout?: string; stderr?: string };
    const how = err.killed ? `killed (${err.signal}) by the ${options.timeout / MINUTE}-minute hang guard` : `exit code ${err.code}`;
    const tail = (text = '') => text.split('\n').slice(-30).join('\n');
    throw new Error(`${[cmd, ...args].join(' ')}: ${how}\n--- stderr (end)\n${tail(err.stderr)}\n--- stdout (end)\n${tail(err.stdout)}`);
  }
}

/** The README's set-up commands, in order, comments stripped, `a && b` split. */
function setupCommands(readme: string): string[] {
  for (const block of readme.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = block[1]!.split('\n').map((l) => l.replace(/#.*$/, '').trim());
    if (!lines.some((l) => /(^|&&\s*)npm start\b/.test(l))) continue;
    return lines.flatMap((l) => l.split('&&').map((c) => c.trim())).filter(Boolean);
  }
  throw new Error('README.md: no ```sh block with `npm start`');
}

interface Step {
  /** The command as the page shows it, after `$ `. */
  command: string;
  expected: string[];
  /** The exit code the page shows (`$ echo $?`), if it does. */
  code?: number;
}

/** A page's CLI transcript: each `$ npx floodgate ...` with the lines it printed and the exit code shown. */
function transcript(doc: string): Step[] {
  const block = [...doc.matchAll(/```text\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('$ npx floodgate'));
  if (block === undefined) throw new Error('no CLI transcript (a ```text block with `$ npx floodgate`)');
  const steps: Step[] = [];
  let echo = false;
  for (const line of block.split('\n')) {
    if (line.startsWith('$ npx floodgate ')) steps.push({ command: line.slice(2), expected: [] });
    else if (line === '$ echo $?') echo = true;
    else if (line.startsWith('$ '))
      continue; // `export REDIS_URL=...`: the test sets the environment
    else if (echo) {
      steps.at(-1)!.code = Number(line);
      echo = false;
    } else if (line.trim() !== '') steps.at(-1)?.expected.push(line);
  }
  return steps;
}

/** A line with what changes from run to run masked: times, durations, counts, ports. */
const shape = (line: string): string =>
  line
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, '<time>')
    .replace(/\b\d+[hms]( \d+[hms])*\b/g, '<duration>')
    .replace(/\b\d+\b/g, '<n>')
    .replace(/\s+/g, ' ')
    .trim();

let dir: string;
let clone: string;
let example: ChildProcess | undefined;
let output = '';
const env = (): NodeJS.ProcessEnv => {
  const e: NodeJS.ProcessEnv = { ...process.env, CI: 'true', npm_config_loglevel: 'error' };
  // This run's own Redis and workspace settings must not leak into the user's first contact.
  for (const k of Object.keys(e)) if (/^(REDIS_URL|FLOODGATE_|npm_package_|npm_lifecycle_|JEST_|INIT_CWD)/.test(k)) delete e[k];
  return e;
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fg-clone-'));
  clone = join(dir, 'floodgate');
  await run('git', ['clone', '--quiet', '--no-hardlinks', root, clone], { timeout: HANG });
}, HANG);

afterAll(async () => {
  if (example && example.exitCode === null) {
    example.kill('SIGTERM');
    await new Promise((r) => example!.once('exit', r));
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test(
  "the README's set-up works on a fresh clone: npm run typecheck before any build, then npm start",
  async () => {
    const readme = readFileSync(join(clone, 'README.md'), 'utf8');
    const commands = setupCommands(readme);
    expect(commands).toContain('npm start');
    const port = await freePort();

    for (const command of commands) {
      if (command === 'npm test') continue;
      if (command === 'npm start') {
        // Before the example builds anything: type-checking works on what the install left.
        await run('npm', ['run', 'typecheck'], { cwd: clone, env: env(), timeout: HANG });
        // The example runs until it is stopped: started, then waited for until it listens.
        example = spawn('npm', ['start'], { cwd: clone, env: { ...env(), PORT: String(port) }, detached: false });
        example.stdout!.on('data', (d: Buffer) => (output += d.toString()));
        example.stderr!.on('data', (d: Buffer) => (output += d.toString()));
        const started = Date.now();
        while (!/example on http:\/\/\S+ \(store: Redis at redis:\/\/\S+\)/.test(output)) {
          if (example.exitCode !== null) throw new Error(`npm start exited ${example.exitCode}:\n${output}`);
          if (Date.now() - started > HANG)
            throw new Error(`npm start did not start within ${HANG / MINUTE} min (the hang guard):\n${output}`);
          await new Promise((r) => setTimeout(r, 200));
        }
        continue;
      }
      const [cmd, ...args] = command.split(/\s+/);
      await run(cmd!, args, { cwd: clone, env: env(), timeout: HANG });
    }
    // The example answers, limited, on the embedded Redis it printed.
    const res = await fetch(`http://127.0.0.1:${port}/`);
    await res.arrayBuffer();
    expect({ status: res.status, limit: res.headers.get('ratelimit-policy') !== null || res.headers.get('ratelimit') !== null }).toEqual({
      status: 200,
      limit: true,
    });
    // ... the one npm start embedded for it (REDIS_URL is unset).
    const embedded = /^embedded redis-server at (redis:\/\/\S+) /m.exec(output)?.[1];
    expect(output).toContain(`(store: Redis at ${embedded})`);
  },
  3 * HANG,
);

/*
 * docs/cli.md's transcript: the state it describes (two limiters of an application, a few requests, a
 * lockout and a manual block) is made with core on a redis-server of this test's own, then every command of
 * the page runs as written in the fresh clone (npx floodgate, the bin an install links), and prints what
 * the page shows (times and counts masked) with the exit code it shows.
 */
test(
  'every command of docs/cli.md (its list and its transcript) runs as written on the fresh clone',
  async () => {
    const doc = readFileSync(join(clone, 'docs', 'cli.md'), 'utf8');
    const redis = await startRedis();
    const client = new Redis(redis.url);
    try {
      const shownPort = /\$ export REDIS_URL=redis:\/\/127\.0\.0\.1:(\d+)/.exec(doc)?.[1];
      expect(shownPort).toBeDefined();
      const closedPort = String(await freePort());
      // The page's Redis is this test's; any other address it shows stands for one where nothing listens.
      const ours = new URL(redis.url).port;
      const local = (text: string): string =>
        text.replace(/127\.0\.0\.1:(\d+)/g, (_m, p: string) => `127.0.0.1:${p === shownPort ? ours : closedPort}`);

      const api = createLimiter({
        redis: client,
        name: 'api',
        limits: [
          { limit: 100, window: '1m' },
          { limit: 1000, window: '1h' },
        ],
      });
      const login = createLimiter({
        redis: client,
        name: 'login',
        algorithm: 'fixed-window',
        limits: { limit: 3, window: '15m', for: 'ip' },
        lockout: { after: 2, within: '15m', duration: '1h', scope: 'ip' },
      });
      for (let i = 0; i < 3; i++) await api.check('ip:203.0.113.7');
      for (let i = 0; i < 5; i++) await login.check('ip:203.0.113.7');
      for (let i = 0; i < 4; i++) await login.check('ip:198.51.100.23');
      await api.block('user:mallory', { duration: '10m', reason: 'credential stuffing' });
      await Promise.all([api.close(), login.close()]); // flushes the denial sample `top` reads

      const sh = async (command: string): Promise<{ lines: string[]; code: number }> => {
        const done = await exec('sh', ['-c', `${command} 2>&1`], {
          cwd: clone,
          env: { ...env(), REDIS_URL: redis.url },
          timeout: 5 * MINUTE, // a hang guard
        }).then(
          (r) => ({ out: r.stdout, code: 0 }),
          (e: { stdout?: string; code?: number }) => ({ out: e.stdout ?? '', code: e.code ?? -1 }),
        );
        return { lines: done.out.split('\n').filter((l) => l.trim() !== ''), code: done.code };
      };

      for (const step of transcript(doc)) {
        const got = await sh(local(step.command));
        expect({ command: step.command, lines: got.lines.map(shape), code: got.code }).toEqual({
          command: step.command,
          lines: step.expected.map(local).map(shape),
          code: step.code ?? got.code,
        });
      }

      // The page's opening list: each command runs and ends with a documented exit code (0, or 1 for
      // "nothing there"), never a usage or connection error.
      const list = /```sh\n([\s\S]*?)```/
        .exec(doc)![1]!
        .split('\n')
        .map((l) => l.replace(/\s+#.*$/, '').trim())
        .filter((l) => l.startsWith('npx floodgate'));
      expect(list.length).toBeGreaterThanOrEqual(5);
      for (const command of list) expect({ command, code: [0, 1].includes((await sh(command)).code) }).toEqual({ command, code: true });
    } finally {
      client.disconnect();
      await redis.stop();
    }
  },
  30 * MINUTE,
);
