import type { AppFactory } from './apps';
import { expressApps } from './apps-express';
import { fastifyApps } from './apps-fastify';
import { honoApps } from './apps-hono';
import { koaApps } from './apps-koa';
import { nestjsExpressApps, nestjsFastifyApps } from './apps-nestjs';
import { nextApps } from './apps-next';

/** Every framework's variants; 'baseline' is the app with no limiter. */
export const FRAMEWORKS: Record<string, Record<string, AppFactory>> = {
  express: expressApps,
  fastify: fastifyApps,
  koa: koaApps,
  hono: honoApps,
  'nestjs-express': nestjsExpressApps,
  'nestjs-fastify': nestjsFastifyApps,
  next: nextApps,
};

/**
 * A variant's app factory: a listed one, or `floodgate@<build>` (any build name: the Floodgate packages
 * snapshotted by bench/scripts/snapshot-before.sh, loaded from BENCH_BEFORE for `@before`, else from
 * BENCH_BUILDS/<build>), run as `floodgate` is.
 */
export function factoryOf(framework: string, variant: string): AppFactory | undefined {
  const apps = FRAMEWORKS[framework];
  return apps?.[variant] ?? (/^floodgate@[\w.-]+$/.test(variant) ? apps?.floodgate : undefined);
}
