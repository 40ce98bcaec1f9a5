import { request as httpRequest } from 'node:http';
import { Hono } from 'hono';
import { stream } from 'hono/streaming';
import request from 'supertest';
import { createLimiter } from '@floodgate/core';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { concurrency, rateLimit } from '@floodgate/hono';
import { serveHono } from './serve';

/*
 * When a Hono response is over (docs/hono.md, "When a response is over"): a streamed body is still in
 * flight when the handler returns, so a concurrency slot is held until its last chunk or until the client
 * leaves; a refund is judged only on a response whose body was sent to its end.
 */
const redis = connect();
const closing = closeAfterEach();

/** What a streaming handler waits on between its first and last chunk. */
function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open: () => open() };
}

async function until(condition: () => Promise<boolean>, what: string, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A GET whose first body chunk has arrived: `rest` resolves with the whole body, `abort()` destroys the socket. */
function firstChunk(url: string, path: string): Promise<{ rest: Promise<string>; abort(): void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, (res) => {
      let body = '';
      const rest = new Promise<string>((done) => {
        res.on('end', () => done(body));
        res.on('error', () => done(body));
        res.on('close', () => done(body));
      });
      res.once('data', (chunk: Buffer) => {
        body += chunk.toString();
        res.on('data', (more: Buffer) => (body += more.toString()));
        resolve({ rest, abort: () => req.destroy() });
      });
    });
    req.on('error', () => undefined);
    req.on('timeout', reject);
    req.end();
  });
}

/** An app with `middleware` and GET /stream, which writes a chunk, waits on `g`, then writes the last. */
async function streaming(middleware: Parameters<Hono['use']>[1], g: ReturnType<typeof gate>): Promise<string> {
  const app = new Hono();
  app.use(middleware);
  app.get('/stream', (c) =>
    stream(c, async (s) => {
      await s.write('first;');
      await g.opened;
      await s.write('last');
    }),
  );
  app.get('/', (c) => c.text('ok'));
  return closing(await serveHono(app)).url;
}

describe('concurrency()', () => {
  const slots = (prefix: string): Promise<number> => redis.zcard(`${prefix}:default:cc1:{ip:127.0.0.1}`);

  test('a streamed body holds its slot after the handler returned, until its last chunk', async () => {
    const prefix = uniquePrefix('honostream');
    const g = gate();
    const url = await streaming(concurrency({ redis, prefix, max: 1 }), g);
    const held = await firstChunk(url, '/stream');
    expect(await slots(prefix)).toBe(1);
    expect((await request(url).get('/')).status).toBe(429);
    g.open();
    expect(await held.rest).toBe('first;last');
    await until(async () => (await slots(prefix)) === 0, 'the slot to be released');
    expect((await request(url).get('/')).status).toBe(200);
  });

  test('a client that leaves in the middle of a streamed body frees its slot', async () => {
    const prefix = uniquePrefix('honostream');
    const g = gate();
    const url = await streaming(concurrency({ redis, prefix, max: 1 }), g);
    const held = await firstChunk(url, '/stream');
    expect(await slots(prefix)).toBe(1);
    held.abort();
    await until(async () => (await slots(prefix)) === 0, 'the slot of the client that left');
    expect((await request(url).get('/')).status).toBe(200);
    g.open();
  });

  test('HEAD requests (whose body Hono drops) and bodiless responses free their slots', async () => {
    const prefix = uniquePrefix('honostream');
    const app = new Hono();
    app.use(concurrency({ redis, prefix, max: 1 }));
    app.get('/', (c) => c.text('ok'));
    app.get('/empty', (c) => c.body(null, 204));
    const url = closing(await serveHono(app)).url;
    for (let i = 0; i < 3; i++) expect((await request(url).head('/')).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await request(url).get('/empty')).status).toBe(204);
    await until(async () => (await slots(prefix)) === 0, 'every slot to be released');
  });
});

describe('refunds', () => {
  const refunding = (prefix: string) =>
    closing(rateLimit({ redis, prefix, limits: { limit: 3, window: '1m' }, skipSuccessfulRequests: true }));
  const remaining = async (prefix: string): Promise<number> => {
    const probe = closing(createLimiter({ redis, prefix, limits: { limit: 3, window: '1m' } }));
    return (await probe.peek('ip:127.0.0.1')).remaining;
  };

  test('a streamed success is given back once its body has been sent to the end', async () => {
    const prefix = uniquePrefix('honorefund');
    const g = gate();
    const url = await streaming(refunding(prefix), g);
    const held = await firstChunk(url, '/stream');
    // The handler returned, but the body is not sent: not judged yet.
    await new Promise((r) => setTimeout(r, 50));
    expect(await remaining(prefix)).toBe(2);
    g.open();
    await held.rest;
    await until(async () => (await remaining(prefix)) === 3, 'the refund');
  });

  test('a client that leaves in the middle of a streamed success stays counted', async () => {
    const prefix = uniquePrefix('honorefund');
    const g = gate();
    const url = await streaming(refunding(prefix), g);
    const held = await firstChunk(url, '/stream');
    held.abort();
    await new Promise((r) => setTimeout(r, 100));
    g.open();
    await new Promise((r) => setTimeout(r, 100));
    expect(await remaining(prefix)).toBe(2);
  });
});

/*
 * Without a Node server behind the request (app.request(): Bun, Deno or Workers hand Hono the same Web
 * standard Request), the end is the body read to its end or cancelled: Floodgate watches the body itself.
 */
describe('without a Node response (the Web standard path)', () => {
  const connInfo = () => ({ remote: { address: '198.51.100.9' } });
  const remaining = async (prefix: string): Promise<number> => {
    const probe = closing(createLimiter({ redis, prefix, limits: { limit: 3, window: '1m' } }));
    return (await probe.peek('ip:198.51.100.9')).remaining;
  };
  function webApp(prefix: string, g: ReturnType<typeof gate>): Hono {
    const app = new Hono();
    app.use(closing(rateLimit({ redis, prefix, limits: { limit: 3, window: '1m' }, skipSuccessfulRequests: true, getConnInfo: connInfo })));
    app.get('/stream', (c) =>
      stream(c, async (s) => {
        await s.write('first;');
        await g.opened;
        await s.write('last');
      }),
    );
    return app;
  }

  test('a streamed success is given back once its body has been read to the end', async () => {
    const prefix = uniquePrefix('honoweb');
    const g = gate();
    const res = await webApp(prefix, g).request('/stream');
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('first;');
    await new Promise((r) => setTimeout(r, 50));
    expect(await remaining(prefix)).toBe(2);
    g.open();
    while (!(await reader.read()).done);
    await until(async () => (await remaining(prefix)) === 3, 'the refund');
  });

  test('a body cancelled in the middle stays counted', async () => {
    const prefix = uniquePrefix('honoweb');
    const g = gate();
    const res = await webApp(prefix, g).request('/stream');
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    g.open();
    await new Promise((r) => setTimeout(r, 100));
    expect(await remaining(prefix)).toBe(2);
  });
});
