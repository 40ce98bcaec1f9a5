import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '@floodgate/testing';

/*
 * A new user's first hour, on a fresh clone of this repository's HEAD: the README's set-up commands as
 * written (its first `sh` block with `npm start`: every command but `npm test`, which is this suite), then,
 * before `npm start` builds anything, `npm run typecheck`; then, against the running example, the CLI
 * transcript (every `$ npx floodgate ...` line of README.md or docs/cli.md: the same header and the same
 * identifiers in each row, times and counts masked). Nothing is taken from this checkout's node_modules or dist.
 */
const root = join(__dirname, '..');
const run = promisify(execFile);
const MINUTE = 60_000;

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
  argv: string[];
  expected: string[];
}

/** The README's CLI transcript: each `$ npx floodgate ...` with the lines it printed. */
function transcript(docs: string[]): Step[] {
  const block = docs
    .flatMap((doc) => [...doc.matchAll(/```text\n([\s\S]*?)```/g)].map((m) => m[1]!))
    .find((b) => b.includes('$ npx floodgate'));
  if (block === undefined) throw new Error('README.md, docs/cli.md: no CLI transcript (a ```text block with `$ npx floodgate`)');
  const steps: Step[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('$ npx floodgate ')) steps.push({ argv: line.slice('$ npx floodgate '.length).split(/\s+/), expected: [] });
    else if (line.startsWith('$ '))
      continue; // `export REDIS_URL=...`: the test sets the environment
    else if (line.trim() !== '') steps.at(-1)?.expected.push(line);
  }
  return steps;
}

/** A line with what changes from run to run masked: times, durations, counts. */
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
  await run('git', ['clone', '--quiet', '--no-hardlinks', root, clone], { timeout: MINUTE });
}, MINUTE);

afterAll(async () => {
  if (example && example.exitCode === null) {
    example.kill('SIGTERM');
    await new Promise((r) => example!.once('exit', r));
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test(
  "the README's set-up, its CLI transcript and npm run typecheck work on a fresh clone",
  async () => {
    const readme = readFileSync(join(clone, 'README.md'), 'utf8');
    const commands = setupCommands(readme);
    expect(commands).toContain('npm start');
    const port = await freePort();

    for (const command of commands) {
      if (command === 'npm test') continue;
      if (command === 'npm start') {
        // Before the example builds anything: type-checking works on what the install left.
        await run('npm', ['run', 'typecheck'], { cwd: clone, env: env(), timeout: 6 * MINUTE });
        // The example runs until it is stopped: started, then waited for until it listens.
        example = spawn('npm', ['start'], { cwd: clone, env: { ...env(), PORT: String(port) }, detached: false });
        example.stdout!.on('data', (d: Buffer) => (output += d.toString()));
        example.stderr!.on('data', (d: Buffer) => (output += d.toString()));
        const started = Date.now();
        while (!/example on http:\/\/\S+ \(store: embedded redis-server at (redis:\/\/\S+)\)/.test(output)) {
          if (example.exitCode !== null) throw new Error(`npm start exited ${example.exitCode}:\n${output}`);
          if (Date.now() - started > 4 * MINUTE) throw new Error(`npm start did not start within 4 min:\n${output}`);
          await new Promise((r) => setTimeout(r, 200));
        }
        continue;
      }
      const [cmd, ...args] = command.split(/\s+/);
      await run(cmd!, args, { cwd: clone, env: env(), timeout: 4 * MINUTE });
    }
    const redisUrl = /embedded redis-server at (redis:\/\/[^\s)]+)/.exec(output)![1]!;

    // The transcript's traffic: 5 x /, 4 x /search, 7 failed logins as ada.
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 5; i++) await fetch(`${base}/`).then((r) => r.arrayBuffer());
    for (let i = 0; i < 4; i++) await fetch(`${base}/search?q=x`).then((r) => r.arrayBuffer());
    for (let i = 0; i < 7; i++) {
      await fetch(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"username":"ada"}' }).then(
        (r) => r.arrayBuffer(),
      );
    }
    // `top` reads the denial sample the example flushes every 5 s.
    await new Promise((r) => setTimeout(r, 6_500));

    for (const step of transcript([readme, readFileSync(join(clone, 'docs', 'cli.md'), 'utf8')])) {
      const { stdout } = await run('npx', ['floodgate', ...step.argv], {
        cwd: clone,
        env: { ...env(), REDIS_URL: redisUrl },
        timeout: MINUTE,
      });
      const got = stdout.split('\n').filter((l) => l.trim() !== '');
      expect({ command: step.argv.join(' '), lines: got.map(shape) }).toEqual({
        command: step.argv.join(' '),
        lines: step.expected.map(shape),
      });
    }
  },
  15 * MINUTE,
);
