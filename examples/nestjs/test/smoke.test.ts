import { exampleSmoke } from '@floodgate/testing';
import { startExample } from '@floodgate/embedded-redis';
import { createApp } from '../src/app';

// The NestJS example's app in this process, on the test Redis (src/server.ts is the program a user runs).
exampleSmoke('nestjs', (options) =>
  startExample(async (store, port) => {
    const app = await createApp(store);
    await app.listen(port, '127.0.0.1');
    return { url: await app.getUrl(), close: () => app.close() };
  }, options),
);
