// `npm run demo` (or `npm run demo -- --framework express`): the shared scripted burst against this example.
import { demoMain } from '@floodgate/embedded-redis';
import { start } from './start';

demoMain('Express', start);
