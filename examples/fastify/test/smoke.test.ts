import { exampleSmoke } from '@floodgate/testing';
import { startExample } from '@floodgate/embedded-redis';
import { createApp } from '../src/app';

// The Fastify example's app in this process, on the test Redis (src/server.ts is the program a user runs).
exampleSmoke('fastify', (options) =>
  startExample(async (store, port) => {
    const app = await createApp(store);
    return { url: await app.listen({ port, host: '127.0.0.1' }), close: () => app.close() };
  }, options),
);
