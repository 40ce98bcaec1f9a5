import { exampleSmoke } from '@floodgate/testing';
import { serveHttp, startExample } from '@floodgate/embedded-redis';
import { createApp } from '../src/app';

// The Koa example's app in this process, on the test Redis (src/server.ts is the program a user runs).
exampleSmoke('koa', (options) => startExample(async (store, port) => serveHttp(createApp(store).listen(port)), options));
