import { serveHttp, startExample, type Running, type StartOptions } from '@floodgate/embedded-redis';
import { createApp } from './app';

export type { Running, StartOptions };

/** Starts the Koa example (store choice, banner and curl lines are shared by the three examples). */
export function start(options: StartOptions = {}): Promise<Running> {
  return startExample('Koa', async (store, port) => serveHttp(createApp(store).listen(port)), options);
}
