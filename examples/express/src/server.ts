// The example's entry point (`npm start`): start() lives in start.ts so the demo can import it without starting a second server.
import { start } from './start';

void start().then(
  (running) => {
    const stop = (): void => void running.close().then(() => process.exit(0));
    process.once('SIGINT', stop).once('SIGTERM', stop);
  },
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
