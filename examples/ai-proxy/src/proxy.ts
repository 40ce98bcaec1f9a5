import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import express, { type Express, type Request, type Response } from 'express';
import type { Redis } from 'ioredis';
import { rateLimit, type RateLimitMiddleware } from '@floodgate/express';
import { promptTokens } from './upstream';

export interface ProxyOptions {
  /** Where the counts live. */
  redis: Redis;
  /**
   * The API keys this proxy accepts. The budget is per key, so a key must be one you issued: if any string
   * were a key, a client could name a new one per request and get a fresh budget each time.
   */
  apiKeys: Iterable<string>;
  /** The OpenAI-compatible API this proxy forwards to, e.g. http://127.0.0.1:4000. */
  upstreamUrl: string;
  /** Key namespace, so several copies of the example can share one Redis. */
  prefix?: string;
  /** Requests per minute per API key. Default 60. */
  requestsPerMinute?: number;
  /** Tokens (prompt and completion) per minute per API key. Default 20,000. */
  tokensPerMinute?: number;
}

/** A completion's tokens when the request names no max_tokens, and the most it may name. */
export const DEFAULT_MAX_TOKENS = 1024;
export const MAX_TOKENS = 4096;

/** The completion tokens a request may produce: its max_tokens, within bounds. Forwarded upstream as is, so it is an upper bound. */
export function maxTokens(req: Request): number {
  const asked: unknown = (req.body as { max_tokens?: unknown } | undefined)?.max_tokens;
  return typeof asked === 'number' && Number.isInteger(asked) && asked > 0 ? Math.min(asked, MAX_TOKENS) : DEFAULT_MAX_TOKENS;
}

/** What a request spent so far, for its settle: the upstream's usage when it reported one, else the prompt and what was relayed. */
interface Produced {
  /**
   * The whole prompt was written to the upstream. From then on its tokens are spent whatever the client
   * does: a model reads the whole prompt before it answers anything, headers included.
   */
  sent: boolean;
  /** The upstream answered with an error status: it did no work (a request it refuses costs no tokens). */
  refused: boolean;
  /** Completion tokens relayed to the client (one per content delta). */
  relayed: number;
  /** total_tokens of the upstream's usage. */
  usage?: number;
}

const apiKey = (req: Request): string | undefined => /^Bearer (\S{1,200})$/.exec(req.get('authorization') ?? '')?.[1];

/**
 * The proxy: POST /v1/chat/completions with an API key (`Authorization: Bearer <key>`), limited per key in
 * requests and tokens per minute. A request is admitted at its estimate (its prompt's tokens plus
 * max_tokens, counted at once) and settled when its response is over at the usage the upstream reported,
 * or, when the client left before it, at the prompt (once sent upstream) and the tokens relayed until then.
 */
export function createProxy(options: ProxyOptions): Express & { limiter: RateLimitMiddleware } {
  const { redis, apiKeys, upstreamUrl, prefix = 'floodgate-ai-proxy', requestsPerMinute = 60, tokensPerMinute = 20_000 } = options;
  const known = new Set(apiKeys);
  const produced = new WeakMap<Request, Produced>();
  const app = express();
  app.use(express.json({ limit: '1mb' }));
  app.use('/v1', (req, res, next) => {
    const key = apiKey(req);
    if (key === undefined || !known.has(key))
      res
        .status(401)
        .json({ error: { message: key === undefined ? 'Missing API key' : 'Incorrect API key', type: 'invalid_request_error' } });
    else next();
  });
  const limit = rateLimit({
    redis,
    prefix,
    name: 'completions',
    limits: [
      { limit: requestsPerMinute, window: '1m' },
      { limit: tokensPerMinute, window: '1m', unit: 'tokens' },
    ],
    identify: (req) => `key:${apiKey(req)}`,
    cost: (req) => ({ requests: 1, tokens: promptTokens(req.body) + maxTokens(req) }),
    settle: (req) => {
      const p = produced.get(req);
      // Never sent upstream (the client left first, the upstream could not be reached), or refused by it: no tokens spent.
      if (p === undefined || !p.sent || p.refused) return { requests: 1, tokens: 0 };
      // Sent: the prompt is spent even when the client leaves before the upstream's first byte.
      return { requests: 1, tokens: p.usage ?? promptTokens(req.body) + p.relayed };
    },
    // The RateLimit headers, and the x-ratelimit-*-requests/-tokens that OpenAI's client libraries read.
    headers: ['draft-8', 'openai'],
    message: { error: { message: 'Rate limit reached for requests or tokens per minute', type: 'rate_limit_exceeded' } },
  });

  app.post('/v1/chat/completions', limit, async (req: Request, res: Response) => {
    const body = req.body as Record<string, unknown>;
    if (!Array.isArray(body.messages)) {
      res.status(400).json({ error: { message: '`messages` must be an array', type: 'invalid_request_error' } });
      return;
    }
    const stream = body.stream === true;
    const state: Produced = { sent: false, refused: false, relayed: 0 };
    produced.set(req, state);
    // The client leaving stops the upstream: no tokens are generated for nobody.
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    try {
      const prompt = JSON.stringify({
        ...body,
        max_tokens: maxTokens(req),
        ...(stream ? { stream_options: { include_usage: true } } : {}),
      });
      const upstream = await post(new URL(`${upstreamUrl}/v1/chat/completions`), prompt, abort.signal, () => (state.sent = true));
      const status = upstream.statusCode ?? 502;
      state.refused = status < 200 || status > 299;
      if (!stream || state.refused) {
        const data = JSON.parse(await text(upstream)) as { usage?: { total_tokens?: unknown } };
        if (typeof data.usage?.total_tokens === 'number') state.usage = data.usage.total_tokens;
        res.status(status).json(data);
        return;
      }
      res.status(200).setHeader('Content-Type', 'text/event-stream');
      res.setHeader('Cache-Control', 'no-cache');
      await relay(upstream, res, state);
      res.end();
    } catch {
      if (!res.headersSent) res.status(502).json({ error: { message: 'The upstream could not be reached', type: 'upstream_error' } });
      else res.end();
    }
  });
  return Object.assign(app, { limiter: limit });
}

/**
 * POSTs `body` (JSON) to `url` and resolves with the response once its headers arrive. `sent` is called when
 * the whole body has been written to the connection (fetch() cannot tell when that is): the moment the
 * prompt's tokens are spent.
 */
function post(url: URL, body: string, signal: AbortSignal, sent: () => void): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      signal,
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(body, sent);
  });
}

/** A response's whole body as text. */
async function text(res: IncomingMessage): Promise<string> {
  let all = '';
  for await (const chunk of res) all += String(chunk);
  return all;
}

/** Relays the upstream's events to the client as they come, counting content deltas and keeping the usage. */
async function relay(body: AsyncIterable<Uint8Array>, res: Response, state: Produced): Promise<void> {
  const decoder = new TextDecoder();
  let pending = '';
  for await (const bytes of body) {
    pending += decoder.decode(bytes, { stream: true });
    let end: number;
    while ((end = pending.indexOf('\n\n')) !== -1) {
      const event = pending.slice(0, end + 2);
      pending = pending.slice(end + 2);
      const data = event.startsWith('data: ') ? event.slice(6).trim() : '';
      if (data !== '' && data !== '[DONE]') {
        const chunk = JSON.parse(data) as { choices?: { delta?: { content?: unknown } }[]; usage?: { total_tokens?: unknown } };
        if (typeof chunk.usage?.total_tokens === 'number') state.usage = chunk.usage.total_tokens;
        if (typeof chunk.choices?.[0]?.delta?.content === 'string') state.relayed++;
      }
      res.write(event);
    }
  }
}
