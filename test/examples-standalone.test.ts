import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { freePort, startRedis, type StartedRedis } from '@floodgate/testing';
import { npm, npmEnv, packPublished, pinned, root, tarballSpecs } from './packing';

/*
 * Each example runs on its own, copied out of the repository as a user would: its folder (without
 * node_modules and dist) goes to a directory under the OS temp directory, its @floodgate/* dependencies
 * point at the packed tarballs (so each must be a published package) and its others at the lockfile's
 * versions (test/packing.ts); then `npm install` and `npm start` (a prestart builds it with its own tsc), with
 * REDIS_URL at a redis-server of this test's own. Nothing of the workspace can be found from there.
 */
const FRAMEWORKS = ['express', 'fastify', 'koa', 'hono', 'nestjs', 'next', 'trpc'];
/** The path under only the global limit: `/`, or the tRPC example's `hello` procedure. */
const homeOf = (framework: string): string => (framework === 'trpc' ? '/hello' : '/');
const MINUTE = 60_000;
/** Hang guards, not bounds: how long npm installs and an example starts take on a busy machine is not what these tests check. */
const HANG = 15 * MINUTE;

let work: string;
let tarballs: string;
let specs: Record<string, string>;
const started: { child: ChildProcess; redis: StartedRedis }[] = [];

beforeAll(() => {
  work = realpathSync(mkdtempSync(join(tmpdir(), 'floodgate-examples-')));
  tarballs = join(work, 'tarballs');
  mkdirSync(tarballs);
  specs = tarballSpecs(packPublished(tarballs), tarballs);
}, HANG);

afterAll(async () => {
  for (const { child, redis } of started) {
    // The example's whole process group (npm, its shell, node): detached below, so it has one of its own.
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    await redis.stop();
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

/**
 * The copied package.json with its dependencies pointed at the tarballs and the lockfile's versions; the
 * adapters' own dependency on @floodgate/core too (overrides), as the registry would resolve it.
 */
function standalone(framework: string, dir: string): void {
  const file = join(dir, 'package.json');
  const manifest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Record<string, string> | undefined>;
  expect(manifest.overrides).toBeUndefined();
  manifest.overrides = { ...specs };
  for (const field of ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies']) {
    for (const name of Object.keys(manifest[field] ?? {})) {
      if (name.startsWith('@floodgate/') && !specs[name]) throw new Error(`examples/${framework}: ${name} is not a published package`);
      manifest[field]![name] = specs[name] ?? pinned(name);
    }
  }
  writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
}

/** Waits until the example's output says where it listens; fails with that output if it exits first. */
async function listening(child: ChildProcess, output: () => string): Promise<string> {
  const deadline = Date.now() + HANG;
  for (;;) {
    const url = /example on (http:\/\/\S+)/.exec(output())?.[1];
    if (url) return url;
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`npm start did not listen (exit ${child.exitCode}):\n${output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Copies examples/<name> out of the repository, points it at the tarballs and runs `npm install` there. */
function install(name: string): string {
  const dir = join(work, name);
  cpSync(join(root, 'examples', name), dir, {
    recursive: true,
    filter: (source) => !/[\\/](node_modules|dist)$/.test(source),
  });
  standalone(name, dir);
  npm(['install', '--prefer-offline', '--no-audit', '--no-fund'], dir);
  return dir;
}

/** `npm start` in `dir` on a free PORT, with REDIS_URL at a redis-server of its own; resolves once it listens. */
async function start(dir: string, env: Record<string, string> = {}) {
  const redis = await startRedis();
  const port = await freePort();
  let output = '';
  const child = spawn('npm', ['start'], {
    cwd: dir,
    env: { ...npmEnv(), REDIS_URL: redis.url, PORT: String(port), ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push({ child, redis });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  expect(await listening(child, () => output)).toBe(`http://localhost:${port}`);
  return { port, redis, child, output: () => output };
}

/** SIGTERM (to npm, its shell and node, as Ctrl-C reaches them all) stops it: the port closes. */
async function stops({ port, child, output }: Awaited<ReturnType<typeof start>>): Promise<void> {
  process.kill(-child.pid!, 'SIGTERM');
  const closed = Date.now() + 10_000;
  while (
    await fetch(`http://127.0.0.1:${port}/`).then(
      () => Date.now() < closed,
      () => false,
    )
  )
    await new Promise((r) => setTimeout(r, 100));
  const after = await fetch(`http://127.0.0.1:${port}/`).then(
    (res) => `still served (${res.status}) 10 s after SIGTERM; exit code ${child.exitCode}; output:\n${output()}`,
    () => 'closed',
  );
  expect(after).toBe('closed');
}

test.each(FRAMEWORKS)(
  'examples/%s copied out of the repository: npm install && npm start, then 200 with RateLimit headers and the 21st request in 10 s is 429',
  async (framework) => {
    const dir = install(framework);
    // Its adapter is the installed tarball, inside the copy: nothing resolves to the workspace.
    // (Node's resolution, from the copy: jest's own maps @floodgate/* to the workspace.)
    const adapter = realpathSync(
      execFileSync(process.execPath, ['-p', `require.resolve('@floodgate/${framework}')`], { cwd: dir, encoding: 'utf8' }).trim(),
    );
    expect(adapter.startsWith(`${dir}${sep}node_modules${sep}`)).toBe(true);

    const app = await start(dir);
    expect(app.output()).toContain(`(store: Redis at ${app.redis.url})`);

    const begun = Date.now();
    const replies: { status: number; limit: string | null; policy: string | null }[] = [];
    for (let i = 0; i < 21; i++) {
      const res = await fetch(`http://127.0.0.1:${app.port}${homeOf(framework)}`);
      await res.arrayBuffer();
      replies.push({ status: res.status, limit: res.headers.get('ratelimit'), policy: res.headers.get('ratelimit-policy') });
    }
    const elapsedMs = Date.now() - begun;
    expect(replies[0]).toEqual({ status: 200, limit: expect.stringMatching(/^"api-10s";r=19;t=\d+$/), policy: expect.any(String) });
    expect(replies.map((r) => r.status)).toEqual([...Array<number>(20).fill(200), 429]);
    expect(elapsedMs).toBeLessThan(10_000);
    await stops(app);
  },
  2 * HANG,
);

test(
  'examples/graphql copied out of the repository: npm install && npm start, then four aliases of search are one operation of four, refused with 429',
  async () => {
    const dir = install('graphql');
    const adapter = realpathSync(
      execFileSync(process.execPath, ['-p', "require.resolve('@floodgate/graphql')"], { cwd: dir, encoding: 'utf8' }).trim(),
    );
    expect(adapter.startsWith(`${dir}${sep}node_modules${sep}`)).toBe(true);
    const app = await start(dir);
    expect(app.output()).toContain(`(store: Redis at ${app.redis.url})`);
    const ask = async (query: string) => {
      const res = await fetch(`http://127.0.0.1:${app.port}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query }),
      });
      return [res.status, ((await res.json()) as { errors?: { extensions?: { code?: string } }[] }).errors?.[0]?.extensions?.code];
    };
    expect(
      await ask('{ a: search(term: "a") { id } b: search(term: "b") { id } c: search(term: "c") { id } d: search(term: "d") { id } }'),
    ).toEqual([429, 'RATE_LIMITED']);
    expect(await ask('{ posts(first: 100) { title author { name } } }')).toEqual([200, undefined]);
    await stops(app);
  },
  2 * HANG,
);

test(
  "examples/ai-proxy copied out of the repository: npm install && npm start, then its README's curl streams a completion, counted in tokens",
  async () => {
    const dir = install('ai-proxy');
    const app = await start(dir, { UPSTREAM_PORT: String(await freePort()) });
    expect(app.output()).toContain('the fake one');
    // The README's curl, as fetch.
    const res = await fetch(`http://127.0.0.1:${app.port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer team-7', 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 200, stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('ratelimit-policy')).toMatch(/tokens/);
    const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: '));
    expect(events.length).toBeGreaterThan(2);
    expect(events.at(-1)).toBe('data: [DONE]');
    await stops(app);
  },
  2 * HANG,
);

test(
  'examples/mcp copied out of the repository: npm install && npm start, then the SDK client calls its tools over Streamable HTTP and the limit answers a tool error',
  async () => {
    const dir = install('mcp');
    const app = await start(dir, { API_KEYS: 'k-1=ada' });
    expect(app.output()).toContain(`(store: Redis at ${app.redis.url})`);
    const url = new URL(`http://127.0.0.1:${app.port}/mcp`);
    expect((await fetch(url, { method: 'POST', body: '{}' })).status).toBe(401);
    const client = new Client({ name: 'standalone', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: 'Bearer k-1' } } }));
    try {
      const summary = (await client.callTool({ name: 'summarize', arguments: { text: 'one two three', max_words: 2 } })) as CallToolResult;
      expect(summary.content).toEqual([{ type: 'text', text: 'one two' }]);
      // 10 calls a minute per tool: the first 10 run (nothing else counted them); 21 cannot all run in one window or across two.
      const results: CallToolResult[] = [];
      for (let i = 0; i < 21; i++) results.push((await client.callTool({ name: 'time' })) as CallToolResult);
      expect(results.slice(0, 10).map((r) => r.isError ?? false)).toEqual(Array<boolean>(10).fill(false));
      const denied = results.find((r) => r.isError);
      expect(denied?.structuredContent).toMatchObject({ error: 'rate_limited', tool: 'time', limit: 10 });
    } finally {
      await client.close();
    }
    await stops(app);
  },
  2 * HANG,
);
