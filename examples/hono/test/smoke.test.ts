import type { Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import { exampleSmoke } from '@floodgate/testing';
import { serveHttp, startExample } from '@floodgate/embedded-redis';
import { createApp } from '../src/app';

// The Hono example's app in this process, on the test Redis (src/server.ts is the program a user runs).
exampleSmoke('hono', (options) =>
  startExample(async (store, port) => serveHttp((createAdaptorServer({ fetch: createApp(store).fetch }) as Server).listen(port)), options),
);
