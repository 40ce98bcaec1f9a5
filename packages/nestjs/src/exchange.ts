import type { ServerResponse } from 'node:http';
import type { ExecutionContext } from '@nestjs/common';
import { checkProxyTrust, watchServerOf, type TrustSetting, type WarningName } from '@floodgate/core/adapter';
import type { RateLimitException } from './exception';

/*
 * The request and response behind an execution context, on either Nest platform: Express's req and res, or
 * Fastify's request and reply (the Node response being reply.raw). A GraphQL resolver's come from its
 * context (`{ req, res }`, or Mercurius's `{ reply }`); a WebSocket message's from its client.
 */

/** One request (or WebSocket message) as the guard reads and answers it. */
export interface Exchange {
  /** What the options' functions see: Express's req, Fastify's request, or for a WebSocket message `{ headers, ip, client, data }`. */
  readonly req: { headers: Record<string, unknown>; [key: string]: unknown };
  /** The client address as the platform resolved it (Express's trust proxy, Fastify's trustProxy). */
  readonly ip: string | undefined;
  /** The Node response; undefined for a WebSocket message. */
  readonly raw: ServerResponse | undefined;
  /** What requestWasSuccessful gets: (req, res) or (request, reply). */
  readonly args: readonly unknown[];
  /** Each limit runs once per key: the request, or for GraphQL each field resolved (aliases included). */
  readonly key: object;
  set(name: string, value: string): void;
  append(name: string, value: string): void;
  /** The trust-proxy warnings this platform can give. */
  checkTrust(warn: (name: WarningName, text: string) => void): void;
  /** Answers a denial where no response carries it (a WebSocket message); over HTTP the exception does. */
  refuse(denial: RateLimitException): void;
}

interface FastifyReplyLike {
  raw: ServerResponse;
  request: { ip?: string; headers: Record<string, unknown> };
  header(name: string, value: string): unknown;
  getHeader(name: string): unknown;
}
type ExpressResLike = ServerResponse & { append(name: string, value: string): unknown };
type ExpressReqLike = { ip?: string; headers: Record<string, unknown>; socket: unknown; app?: { get(name: string): unknown } };

const isFastifyReply = (res: unknown): res is FastifyReplyLike =>
  typeof (res as Partial<FastifyReplyLike> | null)?.header === 'function' &&
  typeof (res as Partial<FastifyReplyLike>).raw?.setHeader === 'function';

const EXPRESS: TrustSetting = { name: "Express's 'trust proxy'", fix: "set 'trust proxy' to the number of proxies or their addresses" };
const FASTIFY: TrustSetting = { name: "Fastify's trustProxy", fix: 'set trustProxy to the number of proxies or their addresses, not true' };

/**
 * Core's trust-proxy warnings, as the Express and Fastify adapters give them. Express says what it trusts
 * (`trust proxy`); Fastify does not, so core reads its effect off the request's ip and the socket's address.
 */
function trustOf(req: { ip?: string; headers: Record<string, unknown> }, socket: unknown, expressTrust: unknown) {
  return (warn: (name: WarningName, text: string) => void): void =>
    checkProxyTrust(warn, expressTrust === undefined ? FASTIFY : EXPRESS, () => {
      const xff = req.headers['x-forwarded-for'];
      const forwarded = typeof xff === 'string' ? xff : undefined;
      const peer = (socket as { remoteAddress?: string } | undefined)?.remoteAddress;
      if (expressTrust === undefined) return { forwarded, ip: req.ip, peer };
      // A list or a count of proxies: whether it believed this sender shows in req.ip.
      return { forwarded, trustsAll: expressTrust === true, ignored: expressTrust ? undefined : true, ip: req.ip, peer };
    });
}

/*
 * In GraphQL every field resolved runs the limits, all on one HTTP response: a limit's item of the list
 * headers (RateLimit-Policy, RateLimit) replaces the one an earlier field wrote rather than repeating it.
 * An item is keyed by its name (`"search-1m";...`), or whole when it has none (draft-6/7's policy).
 */
const itemKey = (item: string): string => (item.startsWith('"') ? item.slice(0, item.indexOf('"', 1) + 1) : item);
const itemsOf = (list: string): string[] => list.split(/,\s*(?=[^\s,])/);

function mergeItems(before: unknown, value: string): string {
  if (before === undefined) return value;
  const items = itemsOf(String(before));
  for (const item of itemsOf(value)) {
    const at = items.findIndex((i) => itemKey(i) === itemKey(item));
    if (at === -1) items.push(item);
    else items[at] = item;
  }
  return items.join(', ');
}

const answered = (): void => undefined;

function overHttp(req: unknown, res: unknown, key: object, perField: boolean): Exchange | undefined {
  if (isFastifyReply(res)) {
    const request = req as FastifyReplyLike['request'] & { raw?: { socket?: unknown } };
    const socket = request.raw?.socket;
    watchServerOf(socket);
    return {
      req: request as Exchange['req'],
      ip: request.ip,
      raw: res.raw,
      args: [request, res],
      key,
      set: (name, value) => void res.header(name, value),
      append: (name, value) => {
        const before = res.getHeader(name);
        res.header(name, perField ? mergeItems(before, value) : before === undefined ? value : `${String(before)}, ${value}`);
      },
      checkTrust: trustOf(request, socket, undefined),
      refuse: answered,
    };
  }
  if (typeof (res as Partial<ExpressResLike> | null)?.setHeader !== 'function' || typeof req !== 'object' || req === null) return undefined;
  const request = req as ExpressReqLike;
  const response = res as ExpressResLike;
  watchServerOf(request.socket);
  return {
    req: request as Exchange['req'],
    ip: request.ip,
    raw: response,
    args: [request, response],
    key,
    set: (name, value) => void response.setHeader(name, value),
    append: perField
      ? (name, value) => void response.setHeader(name, mergeItems(response.getHeader(name), value))
      : (name, value) => void response.append(name, value),
    checkTrust: trustOf(request, request.socket, request.app?.get('trust proxy') ?? false),
    refuse: answered,
  };
}

/**
 * A denied WebSocket message's answer, sent to its client: `{ event: 'exception', data }` as the `ws`
 * platform frames its messages, `data` being Nest's WsException payload (`status: 'error'`) with the
 * denial's body and `retryAfter` in seconds. Nest's own exception filter cannot send it there (it emits
 * on the socket object, which `ws` does not send); on Socket.IO that filter answers.
 */
function refuseOverWs(client: Record<string, unknown>, pattern: unknown): (denial: RateLimitException) => void {
  return (denial) => {
    const send = client.send as ((data: string) => void) | undefined;
    if (typeof send !== 'function' || client.handshake !== undefined || client.readyState !== 1) return;
    const data = { status: 'error', ...(denial.getResponse() as object), ...denial.extensions, cause: { pattern } };
    send.call(client, JSON.stringify({ event: 'exception', data }));
  };
}

/** A WebSocket client's address: `ws`'s socket, or Socket.IO's handshake. */
function overWs(context: ExecutionContext): Exchange {
  const ws = context.switchToWs();
  const client = ws.getClient<Record<string, unknown>>();
  const handshake = client.handshake as { address?: string; headers?: Record<string, unknown> } | undefined;
  const socket = (client._socket ?? (client.conn as { remoteAddress?: string } | undefined)) as { remoteAddress?: string } | undefined;
  const ip = handshake?.address ?? socket?.remoteAddress;
  const nothing = (): void => undefined;
  return {
    req: { headers: handshake?.headers ?? {}, ip, client, data: ws.getData() as unknown },
    ip,
    raw: undefined,
    args: [],
    key: {},
    set: nothing,
    append: nothing,
    checkTrust: nothing,
    // getPattern() is Nest 11's.
    refuse: refuseOverWs(client, typeof ws.getPattern === 'function' ? ws.getPattern() : undefined),
  };
}

/** The exchange of a context, or undefined for a context the guard does not limit (a microservice's). */
export function exchangeOf(context: ExecutionContext): Exchange | undefined {
  const type = context.getType<string>();
  if (type === 'http') {
    const http = context.switchToHttp();
    const req = http.getRequest<object>();
    return overHttp(req, http.getResponse(), req, false);
  }
  if (type === 'graphql') {
    // Resolver arguments: (root, args, context, info); the field's info is the key, so aliases each count.
    const ctx = context.getArgByIndex<Record<string, unknown> | undefined>(2) ?? {};
    const reply = ctx.reply as FastifyReplyLike | undefined;
    const info = context.getArgByIndex<object | undefined>(3) ?? {};
    return overHttp(ctx.req ?? reply?.request, ctx.res ?? reply, info, true);
  }
  if (type === 'ws') return overWs(context);
  return undefined;
}
