import type { AppFactory } from './apps';
import { expressApps } from './apps-express';
import { fastifyApps } from './apps-fastify';
import { koaApps } from './apps-koa';

/** Every framework's variants; 'baseline' is the app with no limiter. */
export const FRAMEWORKS: Record<string, Record<string, AppFactory>> = { express: expressApps, fastify: fastifyApps, koa: koaApps };
