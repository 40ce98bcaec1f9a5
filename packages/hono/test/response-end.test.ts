import { request as httpRequest } from 'node:http';
import { Hono } from 'hono';
import { stream } from 'hono/streaming';
import request from 'supertest';
import { createLimiter } from '@floodgate/core';
import { settled } from '@floodgate/core/testing';
import { closeAfterEach, connect, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import { concurrency, rateLimit } from '@floodgate/hono';
import { serveHono } from './serve';

/*
 * When a Hono response is over (docs/hono.md, "When a response is over"): a streamed body is still in
 * flight when the handler returns, so a concurrency slot is held until its last chunk or until the client
 * leaves; a refund is judged only on a response whose body was sent to its end. What a response's end
 * sets off is awaited with settled(); when a refund was judged is read off requestWasSuccessful, called
 * as it is judged.
 */
const redis = connect();
const closing = closeAfterEach();

/** What a streaming handler waits on between its first and last chunk; `last` is set once the last is written. */
function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open: () => open(), last: false };
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
      g.last = true;
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
    await settled();
    expect(await slots(prefix)).toBe(0);
    expect((await request(url).get('/')).status).toBe(200);
  });

  test('a client that leaves in the middle of a streamed body frees its slot', async () => {
    const prefix = uniquePrefix('honostream');
    const g = gate();
    const url = await streaming(concurrency({ redis, prefix, max: 1 }), g);
    const held = await firstChunk(url, '/stream');
    expect(await slots(prefix)).toBe(1);
    held.abort();
    // settled(): the server has seen the client leave and the lease's release has answered.
    await settled();
    expect(await slots(prefix)).toBe(0);
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
    await settled();
    expect(await slots(prefix)).toBe(0);
  });
});

describe('refunds', () => {
  /** A refunding limiter recording, as each response is judged, whether the last chunk had been written. */
  const refunding = (prefix: string, g: ReturnType<typeof gate>, judged: boolean[]) =>
    closing(
      rateLimit({
        redis,
        prefix,
        limits: { limit: 3, window: '1m' },
        skipSuccessfulRequests: true,
        requestWasSuccessful: () => (judged.push(g.last), true),
      }),
    );
  const remaining = async (prefix: string): Promise<number> => {
    const probe = closing(createLimiter({ ...TEST_DEADLINE, redis, prefix, limits: { limit: 3, window: '1m' } }));
    return (await probe.peek('ip:127.0.0.1')).remaining;
  };

  test('a streamed success is given back once its body has been sent to the end', async () => {
    const prefix = uniquePrefix('honorefund');
    const g = gate();
    const judged: boolean[] = [];
    const url = await streaming(refunding(prefix, g, judged), g);
    const held = await firstChunk(url, '/stream');
    g.open();
    await held.rest;
    await settled();
    // Judged once, after its last chunk (the handler returned long before), and given back.
    expect(judged).toEqual([true]);
    expect(await remaining(prefix)).toBe(3);
  });

  test('a client that leaves in the middle of a streamed success stays counted', async () => {
    const prefix = uniquePrefix('honorefund');
    const g = gate();
    const judged: boolean[] = [];
    const url = await streaming(refunding(prefix, g, judged), g);
    const held = await firstChunk(url, '/stream');
    held.abort();
    // settled(): the server has seen the client leave, and done what it does then.
    await settled();
    g.open();
    await settled();
    expect(judged).toEqual([]);
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
    const probe = closing(createLimiter({ ...TEST_DEADLINE, redis, prefix, limits: { limit: 3, window: '1m' } }));
    return (await probe.peek('ip:198.51.100.9')).remaining;
  };
  function webApp(prefix: string, g: ReturnType<typeof gate>, judged: boolean[]): Hono {
    const app = new Hono();
    const limits = { limit: 3, window: '1m' };
    const judge = (): boolean => (judged.push(g.last), true);
    app.use(
      closing(rateLimit({ redis, prefix, limits, skipSuccessfulRequests: true, requestWasSuccessful: judge, getConnInfo: connInfo })),
    );
    app.get('/stream', (c) =>
      stream(c, async (s) => {
        await s.write('first;');
        await g.opened;
        await s.write('last');
        g.last = true;
      }),
    );
    return app;
  }

  test('a streamed success is given back once its body has been read to the end', async () => {
    const prefix = uniquePrefix('honoweb');
    const g = gate();
    const judged: boolean[] = [];
    const res = await webApp(prefix, g, judged).request('/stream');
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('first;');
    g.open();
    while (!(await reader.read()).done);
    await settled();
    expect(judged).toEqual([true]);
    expect(await remaining(prefix)).toBe(3);
  });

  test('a body cancelled in the middle stays counted', async () => {
    const prefix = uniquePrefix('honoweb');
    const g = gate();
    const judged: boolean[] = [];
    const res = await webApp(prefix, g, judged).request('/stream');
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    g.open();
    await settled();
    expect(judged).toEqual([]);
    expect(await remaining(prefix)).toBe(2);
  });
});
