import { userInfo } from 'node:os';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ConfigError, createLimiter, type LimiterEvent } from '@floodgate/core';
import { manualClock, settled } from '@floodgate/core/testing';
import { closeClients, connect, keysUnder, uniquePrefix } from '@floodgate/testing';
import { DENIAL_META_KEY, rateLimit, type McpRateLimit } from '@floodgate/mcp';

/*
 * rateLimit() around McpServer tools, over the SDK's in-memory transport (no transport information: a
 * call counts against the user this process runs as, as on stdio), counted on the test redis-server, on a
 * manual clock where windows are the subject.
 */
const redis = connect();
afterAll(closeClients);

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

/** An McpServer with the tools `register` adds, and the SDK's client connected to it in memory. */
async function connected(register: (server: McpServer) => void): Promise<Client> {
  const server = new McpServer({ name: 'test', version: '1.0.0' });
  register(server);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(clientSide);
  open.push(client, server);
  return client;
}

const call = async (client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> =>
  (await client.callTool({ name, arguments: args })) as CallToolResult;
const text = (r: CallToolResult): string => (r.content[0]?.type === 'text' ? r.content[0].text : '');

/** A limit whose checks wait for Redis as long as a busy test machine needs (the default deadline is production's). */
function limits(options: Parameters<typeof rateLimit>[0]): McpRateLimit {
  const made = rateLimit(options.limiter === undefined ? { timeoutMs: 10_000, ...options } : options);
  open.push(made);
  return made;
}

test('a denied call is a tool result with isError, the retry time in its text and structured content; the callback does not run', async () => {
  const clock = manualClock();
  const limit = limits({ redis, prefix: uniquePrefix('mcp'), name: 'tools', limits: { limit: 2, window: '1m' }, clock: clock.now });
  let ran = 0;
  const client = await connected((server) =>
    server.registerTool(
      'echo',
      { inputSchema: { text: z.string() } },
      limit.tool('echo', ({ text: said }) => {
        ran++;
        return { content: [{ type: 'text', text: said }] };
      }),
    ),
  );
  expect(text(await call(client, 'echo', { text: 'a' }))).toBe('a');
  expect(text(await call(client, 'echo', { text: 'b' }))).toBe('b');
  const denied = await call(client, 'echo', { text: 'c' });
  expect(ran).toBe(2);
  expect(denied.isError).toBe(true);
  const { retryAfterMs } = denied.structuredContent as { retryAfterMs: number };
  expect(retryAfterMs).toBeGreaterThan(0);
  expect(text(denied)).toBe(`Rate limit reached for the tool "echo"; retry in ${Math.ceil(retryAfterMs / 1000)} s.`);
  expect(denied.structuredContent).toEqual({ error: 'rate_limited', tool: 'echo', retryAfterMs, limit: 2, windowMs: 60_000 });
  expect(denied._meta?.[DENIAL_META_KEY]).toEqual(denied.structuredContent);
  // The session goes on: the client that waits as told is served again.
  clock.advance(retryAfterMs);
  expect(text(await call(client, 'echo', { text: 'd' }))).toBe('d');
  expect(ran).toBe(3);
});

test('a tool with an output schema: the SDK client rejects a denial whose structured content the schema refuses, unless structuredContent: false', async () => {
  const limit = limits({
    redis,
    prefix: uniquePrefix('mcp'),
    name: 'tools',
    limits: { limit: 1, window: '1h' },
    identify: () => 'user:ada',
  });
  const answer = (): CallToolResult => ({ content: [{ type: 'text', text: '4' }], structuredContent: { sum: 4 } });
  const client = await connected((server) => {
    server.registerTool('sum', { outputSchema: { sum: z.number() } }, limit.tool('sum', answer));
    server.registerTool('plain', { outputSchema: { sum: z.number() } }, limit.tool('plain', answer, { structuredContent: false }));
  });
  await client.listTools(); // as a host does: the client then holds each tool's output schema
  expect((await call(client, 'sum')).structuredContent).toEqual({ sum: 4 });
  await expect(call(client, 'sum')).rejects.toThrow(/structured content/i);
  const denied = await call(client, 'plain');
  expect([denied.isError, denied.structuredContent]).toEqual([true, undefined]);
  expect(denied._meta?.[DENIAL_META_KEY]).toMatchObject({ error: 'rate_limited', tool: 'plain' });
});

test("the deny list answers 'forbidden' (waiting changes nothing); Redis unreachable with failure 'closed' answers 'unavailable'", async () => {
  let who = 'user:mallory';
  const listed = limits({
    redis,
    prefix: uniquePrefix('mcp'),
    name: 'tools',
    limits: { limit: 5, window: '1m' },
    deny: ['identity:user:mallory'],
    identify: () => who,
  });
  const client = await connected((server) =>
    server.registerTool(
      'ping',
      {},
      listed.tool('ping', () => ({ content: [] })),
    ),
  );
  const forbidden = await call(client, 'ping');
  expect([forbidden.isError, text(forbidden), forbidden.structuredContent]).toEqual([
    true,
    'Calls to the tool "ping" are not allowed for this client.',
    { error: 'forbidden', tool: 'ping', retryAfterMs: 0 },
  ]);
  who = 'user:ada';
  expect((await call(client, 'ping')).isError).toBeUndefined();
  // A Redis nobody listens on (a port from a closed server), checked under the closed policy.
  const down = connect('redis://127.0.0.1:1', { lazyConnect: true, retryStrategy: () => null });
  const closed = rateLimit({
    redis: down,
    prefix: uniquePrefix('mcp'),
    name: 'down',
    limits: { limit: 5, window: '1m' },
    failure: 'closed',
    timeoutMs: 200,
  });
  open.push(closed);
  const unavailable = await closed.tool('ping', (_extra: object): CallToolResult => ({ content: [] }))({});
  expect(unavailable.structuredContent).toMatchObject({ error: 'unavailable', tool: 'ping' });
  expect(text(unavailable)).toMatch(/^Rate limiting is temporarily unavailable; retry "ping" in \d+ s\.$/);
});

test('without transport information (stdio, in memory) a call counts against the user the process runs as, in every process', async () => {
  const prefix = uniquePrefix('mcp');
  const limit = limits({ redis, prefix, name: 'tools', limits: { limit: 1, window: '1h' } });
  const client = await connected((server) =>
    server.registerTool(
      'ping',
      {},
      limit.tool('ping', () => ({ content: [] })),
    ),
  );
  expect((await call(client, 'ping')).isError).toBeUndefined();
  const state = await limit.limiter.peek(`identity:process:${userInfo().username}`);
  expect(state.remaining).toBe(0);
  // A second server (another process, as far as Redis can tell: its own limiter and client) shares the budget.
  const other = limits({ redis: connect(), prefix, name: 'tools', limits: { limit: 1, window: '1h' } });
  const second = await connected((server) =>
    server.registerTool(
      'ping',
      {},
      other.tool('ping', () => ({ content: [] })),
    ),
  );
  expect((await call(second, 'ping')).isError).toBe(true);
});

test("rules `for: 'tool'` count per identity per tool, unscoped ones per identity over every tool, in one check", async () => {
  const limit = limits({
    redis,
    prefix: uniquePrefix('mcp'),
    name: 'tools',
    limits: [
      { limit: 3, window: '1h' },
      { limit: 2, window: '1h', for: 'tool' },
    ],
    identify: () => 'user:ada',
  });
  const client = await connected((server) => {
    server.registerTool(
      'a',
      {},
      limit.tool('a', () => ({ content: [] })),
    );
    server.registerTool(
      'b',
      {},
      limit.tool('b', () => ({ content: [] })),
    );
  });
  const errors = async (name: string): Promise<boolean | undefined> => (await call(client, name)).isError;
  expect([await errors('a'), await errors('a'), await errors('a')]).toEqual([undefined, undefined, true]); // a's own 2
  expect([await errors('b'), await errors('b')]).toEqual([undefined, true]); // the identity's 3 over both
  expect((await limit.limiter.peek(['tool:a:user:ada'])).remaining).toBe(0);
});

test('a cost per unit, from the arguments; an estimate settled at the cost the result reports', async () => {
  const clock = manualClock();
  const limit = limits({
    redis,
    prefix: uniquePrefix('mcp'),
    name: 'model',
    limits: [
      { limit: 10, window: '1m' },
      { limit: 1000, window: '1m', unit: 'tokens' },
    ],
    identify: () => 'user:ada',
    clock: clock.now,
  });
  const client = await connected((server) =>
    server.registerTool(
      'generate',
      { inputSchema: { maxTokens: z.number().int().positive(), used: z.number().int().nonnegative() } },
      limit.tool('generate', ({ used }) => ({ content: [{ type: 'text', text: 'done' }], _meta: { tokens: used } }), {
        cost: ({ maxTokens }) => ({ requests: 1, tokens: maxTokens }),
        settle: (result) => ({ requests: 1, tokens: Number(result._meta?.tokens) }),
      }),
    ),
  );
  const tokensLeft = async (): Promise<number | undefined> =>
    (await limit.limiter.peek('identity:user:ada', { cost: { requests: 0, tokens: 0 } })).states.find((s) => s.unit === 'tokens')
      ?.remaining;
  expect((await call(client, 'generate', { maxTokens: 600, used: 100 })).isError).toBeUndefined();
  await settled();
  expect(await tokensLeft()).toBe(900); // 500 of the estimate given back
  // An estimate that does not fit is denied before the tool runs, naming the unit.
  const denied = await call(client, 'generate', { maxTokens: 901, used: 0 });
  expect(denied.structuredContent).toMatchObject({ error: 'rate_limited', unit: 'tokens' });
  // More than the estimate is charged past the limit: the debt denies until it is paid off.
  expect((await call(client, 'generate', { maxTokens: 100, used: 2900 })).isError).toBeUndefined();
  await settled();
  expect((await call(client, 'generate', { maxTokens: 1, used: 1 })).isError).toBe(true);
});

test('the settle is written before the result is answered: a server that closes its Redis right after the call loses nothing', async () => {
  const prefix = uniquePrefix('mcp');
  const own = connect();
  const events: LimiterEvent[] = [];
  const options = { prefix, name: 'model', limits: { limit: 1000, window: '1h', unit: 'tokens' }, timeoutMs: 10_000 } as const;
  const limit = rateLimit({ ...options, redis: own, identify: () => 'user:ada', onEvent: (e) => void events.push(e) });
  const client = await connected((server) =>
    server.registerTool(
      'ask',
      {},
      limit.tool('ask', () => ({ content: [] }), { cost: 600, settle: async () => Promise.resolve(100) }),
    ),
  );
  expect((await call(client, 'ask')).isError).toBeUndefined();
  await limit.close();
  await own.quit();
  expect(events.filter((e) => e.type === 'settle-failed')).toEqual([]);
  const after = limits({ ...options, redis });
  expect((await after.limiter.peek('identity:user:ada', { cost: 0 })).remaining).toBe(900);
});

test('a settle that throws or answers no cost keeps the estimate counted and is a settle-failed event; the call still answers', async () => {
  const events: LimiterEvent[] = [];
  const limit = limits({
    redis,
    prefix: uniquePrefix('mcp'),
    name: 'model',
    limits: { limit: 100, window: '1h', unit: 'tokens' },
    identify: () => 'user:ada',
    onEvent: (e) => void events.push(e),
    warnings: false,
  });
  const client = await connected((server) => {
    server.registerTool(
      'throws',
      {},
      limit.tool('throws', () => ({ content: [] }), {
        cost: 30,
        settle: () => {
          throw new Error('no usage');
        },
      }),
    );
    server.registerTool(
      'nothing',
      {},
      limit.tool('nothing', () => ({ content: [] }), { cost: 30, settle: () => undefined as unknown as number }),
    );
  });
  expect((await call(client, 'throws')).isError).toBeUndefined();
  expect((await call(client, 'nothing')).isError).toBeUndefined();
  await settled();
  expect((await limit.limiter.peek('identity:user:ada', { cost: 0 })).remaining).toBe(40);
  expect(
    events
      .filter((e) => e.type === 'settle-failed')
      .map((e) => (e as { reason: string }).reason)
      .sort(),
  ).toEqual(['invalid', 'threw']);
});

test('a callback that throws answers the SDK way (isError) and keeps its count; a cost function that throws runs nothing', async () => {
  const limit = limits({
    redis,
    prefix: uniquePrefix('mcp'),
    name: 'tools',
    limits: { limit: 5, window: '1h' },
    identify: () => 'user:ada',
  });
  let ran = 0;
  const client = await connected((server) => {
    server.registerTool(
      'fails',
      {},
      limit.tool('fails', () => {
        throw new Error('upstream down');
      }),
    );
    server.registerTool(
      'bad-cost',
      {},
      limit.tool(
        'bad-cost',
        () => {
          ran++;
          return { content: [] };
        },
        { cost: () => -1 },
      ),
    );
  });
  const failed = await call(client, 'fails');
  expect([failed.isError, text(failed)]).toEqual([true, 'upstream down']);
  const bad = await call(client, 'bad-cost');
  expect(bad.isError).toBe(true);
  expect(ran).toBe(0);
  expect((await limit.limiter.peek('identity:user:ada')).remaining).toBe(4);
});

test('hostile identities and tool names never collide or escape their keys', async () => {
  const prefix = uniquePrefix('mcp');
  let who = '';
  const limit = limits({ redis, prefix, name: 'tools', limits: { limit: 1, window: '1h', for: 'tool' }, identify: () => who });
  // Called as the SDK calls a tool without input, (extra): names the SDK would warn about are still names.
  const a = limit.tool('a', (_extra: object): CallToolResult => ({ content: [] }));
  const ab = limit.tool('a:b', (_extra: object): CallToolResult => ({ content: [] }));
  const extra = {} as never;
  // ('a', 'b:c') and ('a:b', 'c') would be one identifier if the tool's name were not encoded.
  who = 'b:c';
  expect((await a(extra)).isError).toBeUndefined();
  who = 'c';
  expect((await ab(extra)).isError).toBeUndefined();
  who = `}{\n${'x'.repeat(5000)}*`;
  expect((await a(extra)).isError).toBeUndefined();
  expect((await a(extra)).isError).toBe(true);
  for (const key of await keysUnder(redis, prefix)) expect(key.length).toBeLessThan(300);
});

test('options are checked when the limiter and each tool are made, naming the option', async () => {
  const prefix = uniquePrefix('mcp');
  expect(() => rateLimit({ redis, prefix, limits: { limit: 1, window: '1m' }, identfy: () => 'x' } as never)).toThrow(
    /`identfy`.*did you mean `identify`/,
  );
  expect(() => rateLimit({ redis, prefix, name: 'u', limits: { limit: 1, window: '1m', for: 'user' } })).toThrow(
    /`limits` has a rule for 'user'/,
  );
  expect(() => rateLimit({ redis, prefix, name: 'v', limits: { limit: 1, window: '1m' }, identify: 'x' as never })).toThrow(/`identify`/);
  const limit = limits({
    redis,
    prefix,
    name: 'w',
    limits: [
      { limit: 10, window: '1m' },
      { limit: 100, window: '1m', unit: 'tokens' },
    ],
  });
  const h = (): CallToolResult => ({ content: [] });
  expect(() => limit.tool('t', h, { cost: { requests: 1 } })).toThrow(/`cost` leaves out the unit 'tokens'/);
  expect(() => limit.tool('t', h, { cost: { requests: 1, tokens: 101 } })).toThrow(/`cost.tokens` 101 exceeds the capacity 100/);
  expect(() => limit.tool('t', h, { plan: 'pro' })).toThrow(/`plan`/);
  expect(() => limit.tool('t', h, { settle: 1 as never })).toThrow(/`settle`/);
  expect(() => limit.tool('', h)).toThrow(ConfigError);
  const plain = limits({ redis, prefix, name: 'y', limits: { limit: 1, window: '1m' }, refunds: false });
  expect(plain.limiter.refunds).toBe(false);
  expect(() => plain.tool('t', h, { settle: () => 1 })).toThrow(/`settle` needs/);
  const shared = createLimiter({ redis, prefix, name: 'x', limits: { limit: 1, window: '1m' } });
  open.push(shared);
  expect(() => rateLimit({ limiter: shared, limits: { limit: 1, window: '1m' } } as never)).toThrow(
    /`limits` cannot be combined with `limiter`/,
  );
  expect(() => rateLimit({ limiter: shared }).tool('t', h, { settle: () => 1 })).toThrow(
    /`settle` needs a shared limiter made with `refunds: true`/,
  );
});
