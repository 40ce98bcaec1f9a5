import { serveHttp, startExample, type Running, type StartOptions } from '@floodgate/embedded-redis';
import { createApp } from '../src/app';

/** The Express example's app in this process, on the test Redis (src/server.ts is the program a user runs). */
export const start = (options: StartOptions): Promise<Running> =>
  startExample(async (store, port) => serveHttp(createApp(store).listen(port)), options);
