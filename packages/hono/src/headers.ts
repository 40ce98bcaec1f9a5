import type { Context } from 'hono';
import type { HeaderList } from '@floodgate/core/adapter';

/*
 * Headers go through c.header(), which Hono applies to every response made through the context (c.json,
 * c.body, the error handler's). A handler that returns a Response it made itself (`return fetch(upstream)`,
 * `new Response(...)`) carries none of them: after the chain, every header the request's Floodgate
 * middlewares wrote is put on that response.
 */

/**
 * Per request, on the context under a symbol (a WeakMap entry per request costs more than the rest of a
 * cached denial): every header Floodgate wrote, `true` for a list header that is appended to.
 */
const WRITTEN = Symbol('floodgate.headers');
type Written = { [WRITTEN]?: [string, string, boolean][] };

export function writeHeaders(c: Context, set: HeaderList, append: HeaderList = []): void {
  if (set.length === 0 && append.length === 0) return;
  const list = ((c as Written)[WRITTEN] ??= []);
  for (const [name, value] of set) {
    c.header(name, value);
    list.push([name, value, false]);
  }
  for (const [name, value] of append) {
    c.header(name, value, { append: true });
    list.push([name, value, true]);
  }
}

/** After the chain: the headers again, on a response made without the context (once per request). */
export function keepHeaders(c: Context): void {
  const list = (c as Written)[WRITTEN];
  if (list === undefined || list.length === 0 || c.res.headers.has(list[0]![0])) return;
  const headers = new Headers(c.res.headers);
  for (const [name, value, append] of list) {
    if (append) headers.append(name, value);
    else headers.set(name, value);
  }
  const { body, status, statusText } = c.res;
  c.res = undefined;
  c.res = new Response(body, { status, statusText, headers });
}
