import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { testRedisUrl, uniquePrefix } from '@floodgate/testing';

const WORKER = join(__dirname, 'fixtures', 'check-worker.ts');
const TS = join(__dirname, '..', '..', '..', '..', 'test', 'ts-register.cjs');

interface Report {
  allowed: number;
  sources: string[];
}

function once<T>(child: ChildProcess, test: (msg: unknown) => boolean): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (msg: unknown): void => {
      if (!test(msg)) return;
      child.off('message', onMessage);
      resolve(msg as T);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
  });
}

test('4 processes behind one Redis, 2,000 concurrent checks, limit 100: exactly 100 admitted', async () => {
  const prefix = uniquePrefix('mp');
  const children = Array.from({ length: 4 }, () =>
    fork(WORKER, [testRedisUrl(), prefix, '500'], { execArgv: ['-r', TS], stdio: 'inherit' }),
  );
  try {
    await Promise.all(children.map((c) => once(c, (m) => m === 'ready')));
    const reports = children.map((c) => once<Report>(c, (m) => typeof m === 'object' && m !== null));
    for (const c of children) c.send('go');
    const results = await Promise.all(reports);
    expect(results.reduce((sum, r) => sum + r.allowed, 0)).toBe(100);
    expect([...new Set(results.flatMap((r) => r.sources))].sort()).toEqual(['cache', 'redis']);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
  }
}, 60_000);
