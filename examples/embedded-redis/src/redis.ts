import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { RedisMemoryServer } from 'redis-memory-server';

/**
 * The absolute path of the server binary to start: FLOODGATE_REDIS_SERVER when set (a path, or a name on PATH
 * such as `valkey-server`: the one setting that points every test suite and the examples at another server),
 * else the `redis-server` on PATH. redis-memory-server's `systemBinary` is a path, not a PATH lookup, and a
 * wrong path silently falls back to downloading Redis: so find it here, or fail loudly.
 */
export function redisServerBinary(): string {
  const chosen = process.env.FLOODGATE_REDIS_SERVER;
  if (chosen) {
    const path = chosen.includes('/') ? chosen : lookup(chosen);
    if (!path || !existsSync(path))
      throw new Error(`FLOODGATE_REDIS_SERVER is ${JSON.stringify(chosen)}, which is not a server binary on this machine`);
    return path;
  }
  const fromEnv = process.env.REDISMS_SYSTEM_BINARY;
  if (fromEnv && existsSync(fromEnv)) return fromEnv;
  const found = lookup('redis-server');
  if (!found || !existsSync(found)) {
    throw new Error(
      "Floodgate's tests and embedded example Redis need a real redis-server on PATH (nothing is downloaded). Install it: " +
        '`sudo apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis` (macOS), or set REDIS_URL.',
    );
  }
  return found;
}

/** A command's path on PATH, or '' when there is none. */
function lookup(name: string): string {
  if (!/^[A-Za-z0-9_.-]+$/.test(name)) return '';
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

export interface StartedRedis {
  host: string;
  port: number;
  url: string;
  server: RedisMemoryServer;
  stop(): Promise<void>;
}

/** Starts a redis-server on a free loopback port: the examples' embedded Redis, and private servers for tests. */
export async function startRedis(args: string[] = []): Promise<StartedRedis> {
  const server = new RedisMemoryServer({
    binary: { systemBinary: redisServerBinary() },
    instance: { ip: '127.0.0.1', args: ['--save', '', '--appendonly', 'no', ...args] },
  });
  const host = await server.getHost();
  const port = await server.getPort();
  return {
    host,
    port,
    url: `redis://${host}:${port}`,
    server,
    stop: async () => {
      await server.stop();
    },
  };
}
