import { createServer, request as httpRequest } from 'node:http';
import { settled } from '@floodgate/core/testing';
import { closeClients, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { createProxy } from '../src/proxy';
import { createUpstream } from '../src/upstream';

/*
 * The AI proxy over real sockets: the fake upstream and the proxy each on a loopback port, counting in the
 * test Redis. A prompt of 40 characters is 10 tokens; the fake upstream answers 40 tokens (fewer when
 * max_tokens says so), one every 5 ms.
 */
const redis = connect();
const PROMPT = [{ role: 'user', content: 'How does a token budget hold? '.padEnd(40, '.') }];
type Served = Awaited<ReturnType<typeof serveHttp>>;
let upstream: Served;
beforeAll(async () => {
  upstream = await serveHttp(createUpstream({ tokenMs: 5, answerTokens: 40 }).listen(0, '127.0.0.1'));
});
afterAll(async () => {
  await upstream.close();
  await closeClients();
});

async function startProxy(tokensPerMinute = 20_000, upstreamUrl = upstream.url) {
  const app = createProxy({
    redis,
    apiKeys: ['team-a', 'team-b', 'team-c', 'team-d', 'team-e'],
    upstreamUrl,
    prefix: uniquePrefix('ai-proxy'),
    tokensPerMinute,
  });
  const served = await serveHttp(createServer(app).listen(0, '127.0.0.1'));
  /** Tokens counted for an API key in this minute. */
  const tokens = async (key: string): Promise<number> => {
    const states = (await app.limiter.limiter.peek(`key:${key}`, { cost: { requests: 0, tokens: 0 } })).states;
    return tokensPerMinute - states.find((s) => s.unit === 'tokens')!.remaining;
  };
  return { ...served, tokens, close: async () => (await served.close(), await app.limiter.close()) };
}
let proxy: Awaited<ReturnType<typeof startProxy>> | undefined;
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
});

const post = (url: string, key: string | undefined, body: object) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) },
    body: JSON.stringify(body),
  });

test('a streamed completion is counted at its estimate, then settled at the usage the upstream reported', async () => {
  proxy = await startProxy();
  const res = await post(proxy.url, 'team-a', { messages: PROMPT, max_tokens: 100, stream: true });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: '));
  expect(events.at(-1)).toBe('data: [DONE]');
  const usage = JSON.parse(events.at(-2)!.slice(6)).usage;
  expect(usage).toEqual({ prompt_tokens: 10, completion_tokens: 40, total_tokens: 50 });
  // Estimate 10 + 100, settled at 50 (settled(): the settle its response set off has reached Redis).
  await settled();
  expect(await proxy.tokens('team-a')).toBe(50);
});

test('a completion that is not streamed settles at its usage too; max_tokens bounds what the upstream may produce', async () => {
  proxy = await startProxy();
  const res = await post(proxy.url, 'team-b', { messages: PROMPT, max_tokens: 8 });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { usage: { total_tokens: number } };
  expect(body.usage.total_tokens).toBe(18);
  await settled();
  expect(await proxy.tokens('team-b')).toBe(18);
});

test('concurrent requests are admitted at their estimates within the tokens per minute; the rest get 429', async () => {
  // An upstream of its own, slower (40 tokens of 25 ms: a second a stream), so every check is made before the first settle.
  const slow = await serveHttp(createUpstream({ tokenMs: 25, answerTokens: 40 }).listen(0, '127.0.0.1'));
  proxy = await startProxy(2_000, slow.url);
  const answers = await Promise.all(
    Array.from({ length: 20 }, () => post(proxy!.url, 'team-c', { messages: PROMPT, max_tokens: 300, stream: true })),
  );
  const statuses = answers.map((r) => r.status);
  const bodies = await Promise.all(answers.map((r) => r.text()));
  const admitted = statuses.filter((s) => s === 200).length;
  // Each estimate is 10 + 300 tokens: 6 fit in 2,000, and no settle comes before the streams end.
  expect(admitted).toBe(6);
  expect(statuses.filter((s) => s === 429)).toHaveLength(14);
  expect(JSON.parse(bodies[statuses.indexOf(429)]!)).toEqual({ error: expect.objectContaining({ type: 'rate_limit_exceeded' }) });
  // Each settled at its usage, 50 tokens.
  await settled();
  expect(await proxy.tokens('team-c')).toBe(6 * 50);
  await slow.close();
});

test('a client that hangs up mid-stream is settled at its prompt and the tokens relayed to it, not refunded', async () => {
  proxy = await startProxy();
  const url = new URL(`${proxy.url}/v1/chat/completions`);
  const received = await new Promise<number>((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer team-d' } });
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const seen = (text.match(/"content"/g) ?? []).length;
        if (seen >= 5) {
          req.destroy();
          resolve(seen);
        }
      });
    });
    req.end(JSON.stringify({ messages: PROMPT, max_tokens: 1000, stream: true }));
  });
  expect(received).toBeGreaterThanOrEqual(5);
  // Settled below the estimate (1,010) at the prompt and what was relayed: at least what the client read.
  await settled();
  const counted = await proxy.tokens('team-d');
  expect(counted).toBeGreaterThanOrEqual(10 + received);
  expect(counted).toBeLessThan(10 + 40);
});

test('40 clients that reset once their prompt reached the upstream, before its answer, pay for their prompts: the next is denied', async () => {
  // An upstream that holds every answer's headers until the test lets it: a model reading the prompt.
  const CLIENTS = 40;
  const closed: Promise<void>[] = [];
  let allRead!: () => void;
  const read = new Promise<void>((resolve) => (allRead = resolve));
  let answer!: () => void;
  const headers = new Promise<void>((resolve) => (answer = resolve));
  const held = await serveHttp(
    createUpstream({
      beforeHeaders: (res) => {
        closed.push(new Promise((resolve) => res.once('close', resolve)));
        if (closed.length === CLIENTS) allRead();
        return headers;
      },
    }).listen(0, '127.0.0.1'),
  );
  // A prompt of 400 characters is 100 tokens; with max_tokens 1 an estimate of 101: the budget holds 40.
  const prompt = [{ role: 'user', content: 'Summarise this document. '.padEnd(400, '.') }];
  const PROMPT_TOKENS = 100;
  proxy = await startProxy(CLIENTS * (PROMPT_TOKENS + 1), held.url);
  const url = new URL(`${proxy.url}/v1/chat/completions`);
  const clients = Array.from({ length: CLIENTS }, () => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer team-a' } });
    req.on('error', () => undefined); // the reset below
    req.end(JSON.stringify({ messages: prompt, max_tokens: 1, stream: true }));
    return req;
  });
  // Every prompt has reached the upstream, which has answered nothing yet: each client resets now.
  await read;
  for (const req of clients) req.destroy();
  await Promise.all(closed); // the proxy dropped each upstream call as its client left
  answer();
  // Each is settled at its prompt, whatever its client did: not given back for leaving early.
  await settled();
  expect(await proxy.tokens('team-a')).toBe(CLIENTS * PROMPT_TOKENS);
  // The budget is spent: the next request is denied.
  const next = await post(proxy.url, 'team-a', { messages: prompt, max_tokens: 1, stream: true });
  expect(next.status).toBe(429);
  await next.arrayBuffer();
  await held.close();
});

test('a request without an API key is refused with 401, before the limiter', async () => {
  proxy = await startProxy();
  const res = await post(proxy.url, undefined, { messages: PROMPT });
  expect(res.status).toBe(401);
});

test('a key it did not issue is refused with 401: naming a fresh key per request buys no fresh budget', async () => {
  proxy = await startProxy(2_000);
  const answers = await Promise.all(
    Array.from({ length: 10 }, (_, i) => post(proxy!.url, `made-up-${i}`, { messages: PROMPT, max_tokens: 300 }).then((r) => r.status)),
  );
  expect(answers).toEqual(Array(10).fill(401));
});

test("the answer carries OpenAI's x-ratelimit-* headers per unit beside the RateLimit ones", async () => {
  proxy = await startProxy(2_000);
  const res = await post(proxy.url, 'team-e', { messages: PROMPT, max_tokens: 100 });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
  expect(res.headers.get('x-ratelimit-limit-requests')).toBe('60');
  expect(res.headers.get('x-ratelimit-limit-tokens')).toBe('2000');
  // The estimate (10 + 100) is what was counted when the headers were written.
  expect(res.headers.get('x-ratelimit-remaining-tokens')).toBe('1890');
  expect(res.headers.get('x-ratelimit-reset-tokens')).toMatch(/^(\d+m)?[\d.]+m?s$/);
  expect(res.headers.get('ratelimit-policy')).toContain('tokens');
});
