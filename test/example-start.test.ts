import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { basename, join } from 'node:path';
import { freePort, redisServerBinary } from '@floodgate/testing';

/*
 * `npm start` without npm: `node scripts/example.mjs start` builds (cached after the build of npm run test:all), starts an
 * embedded redis-server and runs the example on it (REDIS_URL). A signal to that root process must stop the
 * whole tree: the example's HTTP server, the redis-server and redis-memory-server's watchdog. The tree is read from /proc
 * while the example runs, and each of its processes must be gone afterwards; the node processes also carry
 * a marker in their environment (redis-server overwrites its own environment with its process title), so a
 * process of the tree that escaped it is found too. Linux only: it reads /proc.
 */
const root = join(__dirname, '..');
const linux = process.platform === 'linux' && existsSync('/proc/self/stat');
const MARK = 'FLOODGATE_EXAMPLE_TEST_MARK';

interface Proc {
  pid: number;
  ppid: number;
  comm: string;
  state: string;
}

/** A process's command line, its arguments joined by spaces ('' once it is gone). */
function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

function readProc(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const [state, ppid] = stat.slice(close + 2).split(' ');
    return { pid, ppid: Number(ppid), comm: stat.slice(stat.indexOf('(') + 1, close), state: state! };
  } catch {
    return undefined; // gone
  }
}

/** The live (not zombie) processes whose environment carries this marker. */
function marked(marker: string): Proc[] {
  const found: Proc[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(`${MARK}=${marker}`)) continue;
    } catch {
      continue;
    }
    const p = readProc(Number(entry));
    if (p && p.state !== 'Z' && p.state !== 'X') found.push(p);
  }
  return found;
}

/** Whether this process (same pid, same command) is still there and not a zombie. */
function alive(p: Proc): boolean {
  const now = readProc(p.pid);
  return !!now && now.comm === p.comm && now.state !== 'Z' && now.state !== 'X';
}

/** The descendants of pid, from /proc. */
function descendants(pid: number): Proc[] {
  const all = readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .map((e) => readProc(Number(e)))
    .filter((p): p is Proc => !!p);
  const out: Proc[] = [];
  const visit = (parent: number): void => {
    for (const p of all.filter((q) => q.ppid === parent)) {
      out.push(p);
      visit(p.pid);
    }
  };
  visit(pid);
  return out;
}

interface Started {
  child: ChildProcess;
  marker: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Every process of the tree, noted from /proc every 10 ms while the root runs. */
  seen: Map<number, Proc>;
}

function startExample(framework: string, port: number): Started {
  const marker = randomBytes(6).toString('hex');
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), [MARK]: marker };
  delete env.REDIS_URL; // the embedded redis-server, whatever the test run uses
  const child = spawn(process.execPath, [join('scripts', 'example.mjs'), 'start', '--framework', framework], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const seen = new Map<number, Proc>();
  const watch = setInterval(() => {
    for (const p of descendants(child.pid!)) seen.set(p.pid, p);
  }, 10);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      clearInterval(watch);
      resolve({ code, signal });
    }),
  );
  const started = { child, marker, stdout: () => out, stderr: () => err, exited, seen };
  all.push(started);
  return started;
}

/** The built command line (`npx floodgate` in the repository), run to its end. */
function floodgate(args: string[]): { args: string[]; status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [join(root, 'packages', 'cli', 'bin', 'floodgate.js'), ...args], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { args, status: run.status, stdout: run.stdout, stderr: run.stderr };
}

async function until(what: string, ok: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const all: Started[] = [];
afterAll(() => {
  // A failed test must not leave its example running: SIGKILL every process its tree had (redis-server too:
  // its watchdog, killed with the rest, would not stop it).
  for (const s of all) {
    for (const p of [...s.seen.values(), ...marked(s.marker)]) if (alive(p)) process.kill(p.pid, 'SIGKILL');
    if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  }
});

(linux ? describe : describe.skip)('node scripts/example.mjs start (npm start without npm)', () => {
  test.each([
    ['express', 'SIGTERM'],
    ['fastify', 'SIGTERM'],
    ['koa', 'SIGTERM'],
    ['hono', 'SIGTERM'],
    ['nestjs', 'SIGTERM'],
    ['graphql', 'SIGTERM'],
    ['trpc', 'SIGTERM'],
    ['mcp', 'SIGTERM'],
    ['express', 'SIGINT'],
  ] as const)(
    '%s: %s to the root process stops the server and its redis-server, and it exits 0',
    async (framework, signal) => {
      const port = await freePort();
      const s = startExample(framework, port);
      await until(
        `the ${framework} example to listen on ${port}`,
        () => s.stdout().includes(`example on http://localhost:${port}`) || s.child.exitCode !== null,
      );
      // The example counts in the embedded redis-server the root process started for it.
      const embedded = /^embedded redis-server at (redis:\/\/\S+) /m.exec(s.stdout())?.[1];
      expect(s.stdout()).toContain(`example on http://localhost:${port} (store: Redis at ${embedded})`);
      // The GraphQL example serves /graphql only (a GET of a query is one); the tRPC example answers procedures: `hello` is its `/`.
      const path = framework === 'graphql' ? '/graphql?query=%7B__typename%7D' : framework === 'trpc' ? '/hello' : '/';
      expect((await fetch(`http://127.0.0.1:${port}${path}`)).status).toBe(200);

      const tree = descendants(s.child.pid!);
      // The example's own program (redis-memory-server's watchdog is a node child of the root process too).
      const server = tree.find(
        (p) => p.ppid === s.child.pid && p.comm === 'node' && cmdline(p.pid).endsWith(join(framework, 'dist', 'server.js')),
      );
      // The binary FLOODGATE_REDIS_SERVER selects (valkey-server, say); /proc's comm is its name, cut at 15 characters.
      const redis = tree.find((p) => p.comm === basename(redisServerBinary()).slice(0, 15));
      expect(server).toBeDefined();
      expect(redis).toBeDefined();

      s.child.kill(signal);
      expect(await s.exited).toEqual({ code: 0, signal: null });
      expect({ redisServer: alive(redis!), server: alive(server!) }).toEqual({ redisServer: false, server: false });
      expect([...tree, ...s.seen.values()].filter(alive)).toEqual([]);
      expect(marked(s.marker)).toEqual([]);
      await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
      expect(s.stderr()).toBe('');
    },
    60_000,
  );

  test.each(['express', 'fastify', 'koa', 'hono', 'nestjs'])(
    '%s: the command line it prints reaches it, and the documented `floodgate override set` (docs/options.md) works against it',
    async (framework) => {
      const port = await freePort();
      const s = startExample(framework, port);
      await until(
        `the ${framework} example to print the command line`,
        () => /npx floodgate inspect .*\n/.test(s.stdout()) || s.child.exitCode !== null,
        60_000,
      );
      const printed = [...s.stdout().matchAll(/^ {2}npx floodgate (.+)$/gm)].map((m) => m[1]!.split(' '));
      expect(printed.map((argv) => argv[0])).toEqual(['limiters', 'override', 'inspect']);
      // The embedded redis-server and the example's own prefix, which are not the command line's defaults.
      const embedded = /^embedded redis-server at (redis:\/\/\S+) /m.exec(s.stdout())?.[1];
      for (const argv of printed) expect(argv.slice(-4)).toEqual(['--url', embedded, '--prefix', 'floodgate-example']);
      // A limiter registers itself at its first check.
      expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);
      // The options table's own example (docs/options.md), with the options the example printed.
      const readme = /`floodgate (override set [^`]+)`/.exec(readFileSync(join(root, 'docs', 'options.md'), 'utf8'))?.[1];
      expect(readme).toBe('override set key:team-7 --plan pro --ttl 30d');
      const runs = [...printed, [...readme!.split(' '), ...printed[0]!.slice(-4)]].map((argv) => floodgate(argv));
      expect(runs.map((r) => [r.args.join(' '), r.status, r.stderr])).toEqual(runs.map((r) => [r.args.join(' '), 0, '']));
      expect(runs[0]!.stdout).toMatch(/^api +sliding-window +free: 20\/10s, 500\/1h; pro: 200\/10s, 5000\/1h /m);
      s.child.kill('SIGTERM');
      expect(await s.exited).toEqual({ code: 0, signal: null });
    },
    90_000,
  );

  describe('a busy port', () => {
    let busy: Server;
    let port: number;
    beforeAll(async () => {
      port = await freePort();
      busy = createServer();
      await new Promise<void>((resolve) => busy.listen(port, resolve));
    });
    afterAll(() => new Promise<void>((resolve) => busy.close(() => resolve())));

    test.each(['express', 'fastify', 'koa', 'hono', 'nestjs', 'graphql', 'trpc', 'mcp'])(
      '%s: one line saying so and how to choose another, exit 1, no redis-server left',
      async (framework) => {
        // The embedded redis-server starts before the example tries the port (s.seen notes it, if it lives 10 ms).
        const s = startExample(framework, port);
        expect(await s.exited).toEqual({ code: 1, signal: null });
        const lines = s
          .stderr()
          .split('\n')
          .filter((l) => l.trim() !== '');
        expect(lines).toContain(`port ${port} is in use; set PORT=... to use another one (PORT=${port + 1} npm start)`);
        expect(lines.filter((l) => /^\s+at |Error/.test(l))).toEqual([]);
        expect([...s.seen.values()].filter(alive)).toEqual([]);
        // redis-memory-server's watchdog (marked) is stopped only after its redis-server has exited.
        expect(marked(s.marker)).toEqual([]);
      },
      60_000,
    );
  });
});
