import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { exampleSmoke } from '@floodgate/testing';

// The Next example as `npm start` runs it (dist/server.js, after `npm run build -w @floodgate/example-next`),
// on the test Redis and port 0.
exampleSmoke('next', async ({ redisUrl, prefix }) => {
  const child = spawn(process.execPath, [join(__dirname, '..', 'dist', 'server.js')], {
    env: { ...process.env, PORT: '0', REDIS_URL: redisUrl, PREFIX: prefix, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += String(chunk);
      const found = /example on (http:\/\/\S+)/.exec(out)?.[1];
      if (found) resolve(found);
    });
    child.once('exit', (code) => reject(new Error(`the Next example exited (${code}): ${out}`)));
  });
  return {
    url,
    store: `Redis at ${redisUrl}`,
    close: () => new Promise<void>((resolve) => child.once('exit', () => resolve()).kill('SIGTERM')),
  };
});
