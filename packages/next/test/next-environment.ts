import { AsyncLocalStorage } from 'node:async_hooks';

/*
 * What `next start` sets up before it loads anything of Next (its node environment): the global that Next's
 * request storage is made from. Jest's environment has globals of its own, without it; imported first by a
 * test that runs Next's server in its process (suite-factory.ts), before next/server loads.
 */
(globalThis as { AsyncLocalStorage?: unknown }).AsyncLocalStorage ??= AsyncLocalStorage;
