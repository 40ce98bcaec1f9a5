import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/*
 * A stand-in for a model behind an OpenAI-compatible API, so the example runs without one: POST
 * /v1/chat/completions answers with words of a fixed text, one token each, at most `max_tokens` of them,
 * streamed as server-sent events (`stream: true`, a last chunk with `usage` when `stream_options.include_usage`)
 * or as one JSON body. It counts a prompt's tokens as one per 4 characters, as a rough tokenizer would.
 * Like a real model it reads the whole prompt before it answers anything: its response headers come after
 * that reading (`beforeHeaders`), so a client can leave once its prompt was sent and before any answer.
 */

export interface UpstreamOptions {
  /** Milliseconds between two streamed tokens. Default 20. */
  tokenMs?: number;
  /** How many tokens an answer has when max_tokens does not stop it first. Default 40. */
  answerTokens?: number;
  /**
   * Awaited once a prompt has been read whole, before the response headers are sent: the time a model
   * takes to read it (default: none). Tests hold the headers with it; `res` is the response to come.
   */
  beforeHeaders?: (res: ServerResponse) => Promise<void>;
}

interface ChatBody {
  messages?: { content?: unknown }[];
  max_tokens?: unknown;
  stream?: unknown;
  stream_options?: { include_usage?: unknown };
}

const WORDS = 'Floodgate counts the estimate at once and settles on what the model really produced'.split(' ');

/** One token per 4 characters of the messages' text, at least 1. */
export function promptTokens(body: unknown): number {
  const messages = (body as ChatBody | undefined)?.messages;
  const chars = Array.isArray(messages) ? messages.reduce((n, m) => n + (typeof m?.content === 'string' ? m.content.length : 0), 0) : 0;
  return Math.max(1, Math.ceil(chars / 4));
}

async function readJson(req: IncomingMessage): Promise<ChatBody> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  return JSON.parse(text) as ChatBody;
}

async function complete(
  req: IncomingMessage,
  res: ServerResponse,
  { tokenMs = 20, answerTokens = 40, beforeHeaders }: UpstreamOptions,
): Promise<void> {
  const body = await readJson(req);
  await beforeHeaders?.(res);
  if (res.destroyed) return; // the caller went away while the prompt was being read: nothing to answer
  const max =
    typeof body.max_tokens === 'number' && Number.isInteger(body.max_tokens) && body.max_tokens > 0 ? body.max_tokens : answerTokens;
  const tokens = Array.from({ length: Math.min(max, answerTokens) }, (_, i) => `${i === 0 ? '' : ' '}${WORDS[i % WORDS.length]}`);
  const usage = { prompt_tokens: promptTokens(body), completion_tokens: tokens.length, total_tokens: promptTokens(body) + tokens.length };
  const id = `chatcmpl-${Date.now().toString(36)}`;
  if (body.stream !== true) {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    const message = { role: 'assistant', content: tokens.join('') };
    res.end(JSON.stringify({ id, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: 'stop' }], usage }));
    return;
  }
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  const chunk = (data: object): boolean => res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', ...data })}\n\n`);
  for (const token of tokens) {
    await new Promise((resolve) => setTimeout(resolve, tokenMs));
    if (res.destroyed) return; // the caller went away: stop generating
    chunk({ choices: [{ index: 0, delta: { content: token }, finish_reason: null }] });
  }
  chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  if (body.stream_options?.include_usage === true) chunk({ choices: [], usage });
  res.end('data: [DONE]\n\n');
}

/** The fake upstream as a Node server (not listening yet). */
export function createUpstream(options: UpstreamOptions = {}): Server {
  return createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'Content-Type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    complete(req, res, options).catch(() => {
      if (!res.headersSent) res.writeHead(400, { 'Content-Type': 'application/json' }).end('{"error":{"message":"bad request"}}');
      else res.destroy();
    });
  });
}
