/*
 * Where a client connects, for Floodgate's own warnings (engine/failure.ts): a Redis URL built from the
 * client's options with its password replaced by `***`, so a warning can name the server it cannot reach
 * without ever printing a secret. Built from parts, never by editing the URL the application typed: a
 * password that is not a valid URL component cannot survive a failed parse.
 */

/** The parts of a connection as ioredis keeps them in `options` (iovalkey the same). */
export interface ConnectionParts {
  host?: unknown;
  port?: unknown;
  path?: unknown;
  username?: unknown;
  password?: unknown;
  db?: unknown;
  tls?: unknown;
}

const MASK = '***';

/** `redis://user:***@host:port/db` (or `rediss://`, or `unix:<path>`), from a client's options. */
export function maskedAddress(parts: ConnectionParts | undefined): string | undefined {
  if (parts === undefined || parts === null || typeof parts !== 'object') return undefined;
  if (typeof parts.path === 'string' && parts.path !== '') return `unix:${parts.path}`;
  if (typeof parts.host !== 'string' || parts.host === '') return undefined;
  const user = typeof parts.username === 'string' ? parts.username : '';
  const secret = typeof parts.password === 'string' && parts.password !== '' ? `:${MASK}` : '';
  const auth = user !== '' || secret !== '' ? `${encodeURIComponent(user)}${secret}@` : '';
  const host = parts.host.includes(':') ? `[${parts.host}]` : parts.host;
  const port = typeof parts.port === 'number' || typeof parts.port === 'string' ? `:${String(parts.port)}` : '';
  const db = typeof parts.db === 'number' && parts.db !== 0 ? `/${parts.db}` : '';
  return `${parts.tls ? 'rediss' : 'redis'}://${auth}${host}${port}${db}`;
}

/** A URL the application gave its client (node-redis's `url`), its password masked; undefined when it does not parse. */
export function maskedUrl(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    const parsed = new URL(url);
    if (parsed.host === '') return undefined;
    if (parsed.password !== '') parsed.password = MASK;
    // Query parameters are where some clients take credentials: none is shown.
    parsed.search = '';
    return parsed.toString();
  } catch {
    return undefined;
  }
}
