import type { AppFactory } from './apps';

type Apps = Record<string, AppFactory>;
/*
 * Each framework's apps load on first use, so a bench server loads its own framework only: loading all seven
 * (NestJS and Next.js among them) took 0.6 s of every server's start, and a smoke run starts about forty.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const LOADERS: Record<string, () => Apps> = {
  express: () => (require('./apps-express') as { expressApps: Apps }).expressApps,
  fastify: () => (require('./apps-fastify') as { fastifyApps: Apps }).fastifyApps,
  koa: () => (require('./apps-koa') as { koaApps: Apps }).koaApps,
  hono: () => (require('./apps-hono') as { honoApps: Apps }).honoApps,
  'nestjs-express': () => (require('./apps-nestjs') as { nestjsExpressApps: Apps }).nestjsExpressApps,
  'nestjs-fastify': () => (require('./apps-nestjs') as { nestjsFastifyApps: Apps }).nestjsFastifyApps,
  next: () => (require('./apps-next') as { nextApps: Apps }).nextApps,
};
/* eslint-enable @typescript-eslint/no-require-imports */

/** Every framework's variants ('baseline' is the app with no limiter), in run order; each loaded when read. */
export const FRAMEWORKS: Readonly<Record<string, Apps>> = Object.defineProperties(
  {},
  Object.fromEntries(
    Object.entries(LOADERS).map(([name, load]) => {
      let apps: Apps | undefined;
      return [name, { enumerable: true, get: () => (apps ??= load()) }];
    }),
  ),
);

/**
 * A variant's app factory: a listed one, or `floodgate@<build>` (any build name: the Floodgate packages
 * snapshotted by bench/scripts/snapshot-before.sh, loaded from BENCH_BEFORE for `@before`, else from
 * BENCH_BUILDS/<build>), run as `floodgate` is.
 */
export function factoryOf(framework: string, variant: string): AppFactory | undefined {
  const apps = FRAMEWORKS[framework];
  return apps?.[variant] ?? (/^floodgate@[\w.-]+$/.test(variant) ? apps?.floodgate : undefined);
}
