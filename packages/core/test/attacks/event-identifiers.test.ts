import { join } from 'node:path';
import ts from 'typescript';
import {
  createConcurrencyLimiter,
  createLimiter,
  type Decision,
  type Limiter,
  type LimiterEvent,
  type LimiterOptions,
} from '@floodgate/core';
import { algorithmTag, encodeIdentifier, keyScheme } from '@floodgate/core/admin';
import { closeClients, connect, spawnRedis, uniquePrefix, type RedisProcess, TEST_DEADLINE } from '@floodgate/testing';
import { toStoreError } from '../../src/stores/deadline';

/*
 * Attack: personal data in events. Identifiers (an IP, a user id, an e-mail) are personal data; events go
 * to metrics, logs and third-party telemetry. With `events.identifiers` off (the default) no event may carry
 * one, in any field, nested decision, error or the driver's error inside it. Every event type the source
 * declares (LimiterEvent, read from engine/events.ts by the TypeScript compiler, so a new type cannot escape this
 * test) is produced here against a real Redis, by every limiter that emits it, with identifiers in the very
 * objects the event is made from; the event must hold none of them.
 */
afterAll(closeClients);
const redis = connect();
const quiet = { warn: () => undefined };

/** Kept in keys as it is, and hashed (outside [A-Za-z0-9._:@/-]): both forms must stay out. */
const RAW_ID = 'user:alice.secret-42';
const HASHED_ID = 'email:Alice Smith <alice@example.com>';
const FORBIDDEN = [RAW_ID, 'alice.secret-42', HASHED_ID, 'alice@example.com', encodeIdentifier(HASHED_ID)];

/** Every string reachable from `value`: keys, values, and an Error's own properties (message, stack, cause, command ...). */
function strings(value: unknown, seen = new Set<object>()): string[] {
  if (typeof value === 'string') return [value];
  if (value instanceof Uint8Array) return [Buffer.from(value).toString('utf8')];
  if (typeof value !== 'object' || value === null || seen.has(value)) return [];
  seen.add(value);
  return Object.getOwnPropertyNames(value).flatMap((k) => [k, ...strings((value as Record<string, unknown>)[k], seen)]);
}

function leaked(value: unknown): string[] {
  const all = strings(value);
  return FORBIDDEN.filter((f) => all.some((s) => s.includes(f)));
}

/** The `type` of each member of the LimiterEvent union, as the compiler reads engine/events.ts. */
function declaredEventTypes(): string[] {
  const file = join(__dirname, '..', '..', 'src', 'engine', 'events.ts');
  const program = ts.createProgram([file], { strict: true, noEmit: true, skipLibCheck: true, target: ts.ScriptTarget.ES2022 });
  const checker = program.getTypeChecker();
  const alias = program
    .getSourceFile(file)!
    .statements.find((s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === 'LimiterEvent')!;
  const union = checker.getTypeAtLocation(alias.name);
  return (union.isUnion() ? union.types : [union]).map((member) => {
    const literal = checker.getTypeOfSymbolAtLocation(member.getProperty('type')!, alias);
    return String((literal as ts.StringLiteralType).value);
  });
}

interface Produced {
  events: LimiterEvent[];
  /** What the check returned (a decision, a lease): it holds the identifiers the events were made from. */
  carrier: unknown;
}
type Scenario = [string, () => Promise<Produced>];

let renamed: RedisProcess;
beforeAll(async () => {
  // A server that cannot run the scripts (EVALSHA and EVAL renamed away): the driver's error holds the command, keys included.
  renamed = await spawnRedis(['--rename-command', 'EVALSHA', "''", '--rename-command', 'EVAL', 'floodgate-test-eval']);
});
afterAll(() => renamed.stop());

const STILL = Date.UTC(2031, 0, 1, 0, 10, 30);

function limiter(events: LimiterEvent[], options: Partial<LimiterOptions> = {}) {
  return createLimiter({
    ...TEST_DEADLINE,
    redis,
    prefix: uniquePrefix('evid'),
    algorithm: 'fixed-window',
    limits: { limit: 1, window: '1m' },
    // Held still: a fixed minute on the real clock may end between a test's admission and its denial.
    clock: () => STILL,
    failure: 'closed',
    logger: quiet,
    onEvent: (e) => events.push(e),
    ...options,
  });
}

/** Makes the identifier's state key a set: the check script's own read of it fails (WRONGTYPE), with the keys in the driver's error. */
async function wrongType(prefix: string, id: string, tag = algorithmTag('fixed-window')!): Promise<void> {
  await redis.sadd(keyScheme(prefix, 'default', tag, false).state(encodeIdentifier(id)), 'x');
}

/** The events of a limiter made with `options` while `act` runs; what `act` returns is the carrier. */
async function produce(options: Partial<LimiterOptions>, act: (l: Limiter) => Promise<unknown>): Promise<Produced> {
  const events: LimiterEvent[] = [];
  const l = limiter(events, options);
  try {
    return { events, carrier: await act(l) };
  } finally {
    await l.close();
  }
}

const IDS = [RAW_ID, HASHED_ID];
/** Two checks of both identifiers (a limit of 1: the second is denied); the second's decision. */
async function twice(l: Limiter): Promise<Decision> {
  await l.check(IDS);
  return l.check(IDS);
}

const SCENARIOS: Record<LimiterEvent['type'], Scenario[]> = {
  decision: [['a check of two identifiers, allowed then denied', () => produce({}, twice)]],
  refund: [
    [
      'a refund of both identifiers',
      () =>
        produce({ refunds: true, limits: { limit: 5, window: '1m' } }, async (l) => {
          const d = await l.check(IDS);
          expect(await l.refund(d)).toBe(true);
          return d;
        }),
    ],
  ],
  'settle-failed': [
    [
      'a reservation of both identifiers settled at no cost',
      () =>
        produce({ refunds: true, limits: { limit: 5, window: '1m' } }, async (l) => {
          const r = await l.reserve(IDS, { cost: 2 });
          await expect(r.settle(undefined as unknown as number)).rejects.toMatchObject({ code: 'ERR_FLOODGATE_ARGUMENT' });
          return r.decision;
        }),
    ],
  ],
  'store-error': [
    [
      "an error reply, the driver's error carrying the command's keys",
      () =>
        produce({}, async (l) => {
          await wrongType(l.prefix, RAW_ID);
          const d = await l.check(IDS);
          expect(d.error?.kind).toBe('reply');
          return d;
        }),
    ],
    [
      "a server that cannot run the scripts, the driver's error carrying the command's keys",
      () =>
        produce({ redis: connect(renamed.url), failure: 'open' }, async (l) => {
          const d = await l.check(IDS);
          expect(d.error?.kind).toBe('unsupported');
          return d;
        }),
    ],
    [
      'a concurrency limiter whose lease fails',
      async () => {
        const events: LimiterEvent[] = [];
        const prefix = uniquePrefix('evcc');
        await redis.set(keyScheme(prefix, 'default', 'cc1', false).state(encodeIdentifier(RAW_ID)), 'x');
        const cc = createConcurrencyLimiter({ redis, prefix, max: 2, failure: 'closed', logger: quiet, onEvent: (e) => events.push(e) });
        const carrier = await cc.lease(IDS);
        expect(carrier).toMatchObject({ granted: false, reason: 'store-unavailable' });
        await cc.close();
        return { events, carrier };
      },
    ],
  ],
  'health-check': [
    [
      'a readiness probe after checks of both identifiers',
      () =>
        produce({}, async (l) => {
          const d = await twice(l);
          expect((await l.health()).status).toBe('ok');
          return d;
        }),
    ],
  ],
  'shadow-deny': [
    [
      'shadow mode over the limit',
      () =>
        produce({ mode: 'shadow' }, async (l) => {
          const d = await twice(l);
          expect(d.shadowDenied).toBe(true);
          return d;
        }),
    ],
    [
      "shadow mode, a denial of failure: 'local' carrying the store's error",
      () => produce({ mode: 'shadow', failure: 'local' }, shadowLocalDenial),
    ],
  ],
};

/** Shadow mode, the state key unreadable: 'local' decides, and its denial carries the store's error. */
async function shadowLocalDenial(l: Limiter): Promise<Decision> {
  await wrongType(l.prefix, RAW_ID);
  const d = await twice(l);
  expect(d).toMatchObject({ shadowDenied: true, source: 'fallback' });
  expect(d.error?.kind).toBe('reply');
  return d;
}

test('the scenarios cover every event type the source declares', () => {
  const declared = declaredEventTypes();
  expect(declared.length).toBeGreaterThanOrEqual(4);
  expect(Object.keys(SCENARIOS).sort()).toEqual([...declared].sort());
});

describe.each(Object.entries(SCENARIOS))('%s events, events.identifiers off (the default)', (type, scenarios) => {
  test.each(scenarios)('%s: no identifier in any field', async (_, scenario) => {
    const { events, carrier } = await scenario();
    const ofType = events.filter((e) => e.type === type);
    expect(ofType.length).toBeGreaterThan(0);
    // The objects the events were made from hold the identifiers: the test has something to find.
    expect(leaked(carrier).length).toBeGreaterThan(0);
    expect(leaked(ofType)).toEqual([]);
    expect(leaked(events)).toEqual([]);
  });
});

describe('events.identifiers: true still gives them', () => {
  test('shadow-deny: the whole decision; store-error: the driver error as it came', async () => {
    const { events, carrier } = await produce({ mode: 'shadow', failure: 'local', events: { identifiers: true } }, shadowLocalDenial);
    const d = carrier as Decision;
    const shadow = events.find((e) => e.type === 'shadow-deny');
    expect(shadow).toMatchObject({ type: 'shadow-deny', kind: 'user', decision: { identifier: d.identifier, states: d.states } });
    const storeError = events.filter((e) => e.type === 'store-error').at(-1);
    expect(storeError?.type === 'store-error' && storeError.error).toBe(d.error);
  });
});

test("with identifiers off a shadow-deny keeps what is not personal: the kind, the rule's numbers, the error's kind", async () => {
  const { events, carrier } = await produce({ mode: 'shadow', failure: 'local' }, shadowLocalDenial);
  const shadow = events.find((e) => e.type === 'shadow-deny');
  expect(shadow).toMatchObject({
    kind: 'user',
    decision: { allowed: false, reason: 'limit', limit: 1, states: [{ identifier: '', limit: 1, remaining: 0 }, { identifier: '' }] },
  });
  expect(shadow?.type === 'shadow-deny' && shadow.decision.identifier).toBeUndefined();
  expect(shadow?.type === 'shadow-deny' && shadow.decision.error?.kind).toBe('reply');
  expect(shadow?.type === 'shadow-deny' && shadow.decision.error?.message).toBe((carrier as Decision).error?.message);
});

test("a server's reply that quotes the refused command's arguments: the store error (events, warnings, health) quotes none", () => {
  // Redis 7's words for a command it does not know, with the first 128 characters of its arguments.
  const reply = Object.assign(
    new Error(`ERR unknown command 'evalsha', with args beginning with: 'a94a8fe5' '2' 'floodgate:default:fw2:{${RAW_ID}}' `),
    {
      name: 'ReplyError',
    },
  );
  const error = toStoreError(reply);
  expect(error.kind).toBe('unsupported');
  expect(error.message).toContain("unknown command 'evalsha'");
  expect(leaked(error.message)).toEqual([]);
});
