import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join, relative } from 'node:path';
import type { NextRequest } from 'next/server';
import { HAND_429, floodgateOptions, listenOn, type AppFactory, type Listen } from './apps';
import { HEADER } from './shapes';

/*
 * Next.js 16 (App Router, Node.js runtime): the app in bench/next-app, built once with `next build` and
 * served by Next's own request handler in the bench server's process (a custom server, as
 * examples/next's), so its CPU time is read and its core pinned as every other framework's. The server
 * hands the app its options through a global (bench/next-app/bench.js) and sends every request (wrk asks
 * for `/`) to its variant's route, marked with the app (port) it came in on:
 *   baseline:         /plain, a route handler with no limiter (the proxy does not run there);
 *   floodgate:        /proxy behind `rateLimit()` in proxy.js (the quick start of docs/next.md);
 *   floodgate-route:  /route-floodgate, the handler wrapped with `routeRateLimit()`;
 *   429:              /proxy behind a proxy that answers the hand-written 429 (the bound for `floodgate`'s denial);
 *   429-route:        /route-429, a route handler that answers it (the bound for `floodgate-route`'s).
 * No peer: @upstash/ratelimit, the limiter Next.js apps use, talks to Upstash's REST API and cannot be
 * pointed at a plain Redis (it would need an HTTP bridge in front of the bench's redis-server).
 */
export const NEXT_APP = join(__dirname, '..', '..', 'next-app');
const KEY = Symbol.for('floodgate.bench.next');
/** @floodgate/next's flag that its peer stamp is on in this process (packages/next/src/peer.ts). */
const PEER_STAMP = Symbol.for('floodgate.next.peer-stamp');
const STAMP = join(NEXT_APP, '.next', 'floodgate-bench-sources');
const ROOT = join(__dirname, '..', '..', '..');

/** Every file under `dir` (but .next and node_modules), sorted, as paths relative to it. */
function files(dir: string, under = dir): string[] {
  return readdirSync(dir)
    .filter((f) => f !== '.next' && f !== 'node_modules')
    .flatMap((f) => {
      const path = join(dir, f);
      return statSync(path).isDirectory() ? files(path, under) : [relative(under, path)];
    })
    .sort();
}

/**
 * What the build holds: the app's sources, Next's version and the Floodgate build bundled into it
 * (@floodgate/next and @floodgate/core's dist), so a change to any of them, and nothing else, rebuilds.
 */
export function nextAppHash(): string {
  const hash = createHash('sha256');
  hash.update(`next ${(JSON.parse(readFileSync(require.resolve('next/package.json'), 'utf8')) as { version: string }).version}\n`);
  const dirs = [
    NEXT_APP,
    ...['@floodgate/next', '@floodgate/core'].map((p) =>
      join(dirname(require.resolve(`${p}/package.json`, { paths: [NEXT_APP] })), 'dist'),
    ),
  ];
  for (const dir of dirs)
    for (const f of files(dir)) {
      hash.update(`${relative(ROOT, join(dir, f))}\n`);
      hash.update(readFileSync(join(dir, f)));
    }
  return hash.digest('hex');
}

/**
 * The app built (`next build`, about a minute on 2 cores) unless the build in bench/next-app/.next was
 * made from the same sources; returns whether it built. Run once before the servers start.
 */
export function buildNextApp(log: (line: string) => void = () => undefined): boolean {
  const hash = nextAppHash();
  if (existsSync(STAMP) && readFileSync(STAMP, 'utf8') === hash) return false;
  log('next: building bench/next-app (next build; cached in bench/next-app/.next until its sources or the Floodgate build change)');
  const built = spawnSync(process.execPath, [require.resolve('next/dist/bin/next'), 'build', '--webpack'], {
    cwd: NEXT_APP,
    encoding: 'utf8',
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', NODE_ENV: 'production' },
  });
  if (built.status !== 0) throw new Error(`next build failed in bench/next-app:\n${built.stdout}\n${built.stderr}`);
  writeFileSync(STAMP, hash);
  return true;
}

/** What bench/next-app/bench.js reads: the variant's part, and each app's Floodgate options (by its index). */
interface BenchNext {
  /** A Floodgate variant: the server starts as docs/next.md says, `@floodgate/next/register` first. */
  limited: boolean;
  proxy?: 'floodgate' | '429';
  hand429: typeof HAND_429;
  apps: (ReturnType<typeof floodgateOptions<NextRequest>> | undefined)[];
}
type Variant = Omit<BenchNext, 'apps'>;
/** bench/next-app/bench.js's APP_HEADER: the app (port) a request came in on. */
const APP_HEADER = 'x-floodgate-bench-app';

/** Next's request handler. */
type Handle = ReturnType<ReturnType<typeof import('next').default>['getRequestHandler']>;
/** The process's one Next app (its request handler), started by its first app. */
let started: Promise<Handle> | undefined;

async function startNext(variant: Variant, port: number): Promise<Handle> {
  if (!existsSync(STAMP)) throw new Error('bench/next-app is not built (npm run bench builds it; apps-next.ts buildNextApp)');
  /*
   * The peer-address stamp: loaded first in a Floodgate variant's server, as users start theirs
   * (`--require @floodgate/next/register`). Next loads proxy.js, and with it @floodgate/next, in every
   * server of the app; in those with no limiter the stamp's flag is set without the stamp, so they do
   * none of its work (it subscribes to every request of the process).
   */
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (variant.limited) require('@floodgate/next/register');
  else (globalThis as { [PEER_STAMP]?: true })[PEER_STAMP] = true;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const next = require('next') as typeof import('next').default;
  const app = next({ dev: false, dir: NEXT_APP, hostname: '127.0.0.1', port, quiet: true });
  await app.prepare();
  return app.getRequestHandler();
}

/**
 * An app of the process's Next app: its own port, every request sent to `route` and marked with the app's
 * index, which the proxy and the limited route read their Floodgate options by (bench.js perApp). Next
 * loads each module of the app once a process, so a process serves one variant: the smoke run gives it
 * every shape's app (server-pool.ts), a full run one.
 */
function nextServer(route: string, variant: Variant, floodgate?: BenchNext['apps'][number]): Listen {
  return async (port) => {
    const g = globalThis as { [KEY]?: BenchNext };
    const bench = (g[KEY] ??= { ...variant, apps: [] });
    if (bench.limited !== variant.limited || bench.proxy !== variant.proxy)
      throw new Error('bench: a Next.js server process serves the apps of one variant');
    const index = bench.apps.push(floodgate) - 1;
    const handle = await (started ??= startNext(variant, port));
    const server = createServer((req, res) => {
      req.url = route;
      req.headers[APP_HEADER] = String(index);
      void handle(req, res);
    });
    server.keepAliveTimeout = 60_000;
    await listenOn(server, port);
  };
}

/** The header bag the shapes read the client id from. */
const headers = (req: NextRequest): Record<string, string | undefined> => ({ [HEADER]: req.headers.get(HEADER) ?? undefined });

const proxied: AppFactory = (shape, redis, variant) =>
  nextServer(
    '/proxy',
    { limited: true, proxy: 'floodgate', hand429: HAND_429 },
    floodgateOptions<NextRequest>(shape, redis, variant, headers),
  );

export const nextApps: Record<string, AppFactory> = {
  baseline: () => nextServer('/plain', { limited: false, hand429: HAND_429 }),
  floodgate: proxied,
  'floodgate+autopipeline': proxied,
  'floodgate-route': (shape, redis, variant) =>
    nextServer('/route-floodgate', { limited: true, hand429: HAND_429 }, floodgateOptions<NextRequest>(shape, redis, variant, headers)),
  '429': () => nextServer('/proxy', { limited: false, proxy: '429', hand429: HAND_429 }),
  '429-route': () => nextServer('/route-429', { limited: false, hand429: HAND_429 }),
};
