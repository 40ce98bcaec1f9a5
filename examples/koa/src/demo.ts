// `npm run demo` (or `npm run demo -- --framework koa`): the shared scripted burst against this example.
import { demoMain } from '@floodgate/embedded-redis';
import { start } from './start';

demoMain('Koa', start);
