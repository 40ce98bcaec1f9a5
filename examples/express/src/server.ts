// The example's entry point (`npm start`): start() lives in start.ts so the demo and tests import it without starting a server.
import { runServer } from '@floodgate/embedded-redis';
import { start } from './start';

runServer(start);
