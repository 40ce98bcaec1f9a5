import { buildSchema, getOperationAST, parse, type FragmentDefinitionNode } from 'graphql';
import { ConfigError } from '@floodgate/core';
import { rateLimitDirective } from '@floodgate/graphql';
import { kindOf } from '../src/coordinates';
import { planOperation, type PlannedField } from '../src/operation-plan';
import { resolveOptions } from '../src/options';
import { SchemaLimits } from '../src/schema-limits';
import { actual, estimate } from '../src/tally';

/* Plans, estimates and tallies from documents and results, on schemas of the test's own (no server, no Redis). */

const SDL = `${rateLimitDirective}
  type Query { node: Node, feed(first: Int): [Item!]!, conn(first: Int): Conn!, grid: [[Item!]!]! }
  interface Node { id: ID! }
  type User implements Node { id: ID! @rateLimit(limit: 10, window: "1m"), name: String! }
  type Bot implements Node { id: ID! }
  union Item = User | Bot
  type Conn { edges: [Edge!]! }
  type Edge { node: User! @rateLimit(cost: 3) }
`;

function tallies(query: string, data?: unknown, variables?: Record<string, unknown>) {
  const schema = buildSchema(SDL);
  const limits = new SchemaLimits(schema, resolveOptions({}));
  const document = parse(query);
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const d of document.definitions) if (d.kind === 'FragmentDefinition') fragments[d.name.value] = d;
  const fields = planOperation(limits, fragments, getOperationAST(document)!, variables, {
    listArguments: ['first'],
    defaultListSize: 100,
  });
  const est = estimate(fields as PlannedField<unknown>[]);
  const act = data === undefined ? undefined : actual(schema, fields as PlannedField<unknown>[], data);
  return {
    est: { cost: est.cost, counts: Object.fromEntries(est.counts) },
    act: act && { cost: act.cost, counts: Object.fromEntries(act.counts) },
  };
}

test('a field selected through an interface counts against every implementation limited; __typename in the result picks the one that ran', () => {
  const { est, act } = tallies('{ node { id ... on User { name } } }', { node: { __typename: 'Bot', id: 'b' } });
  expect(est.counts).toEqual({ 'User-id': 1 });
  expect(act!.counts).toEqual({});
});

test('a connection: its first sizes the edges beneath it; a cost alone (no limit) is paid per value and limits nothing', () => {
  const { est, act } = tallies(
    'query ($n: Int) { conn(first: $n) { edges { node { id } } } }',
    { conn: { edges: [{ node: { id: '1' } }] } },
    { n: 4 },
  );
  // conn 1 + edges 4 (objects, 1 each) + node 4 x 3.
  expect(est).toEqual({ cost: 1 + 4 + 12, counts: { 'User-id': 4 } });
  expect(act).toEqual({ cost: 1 + 1 + 3, counts: { 'User-id': 1 } });
});

test('lists of lists multiply by defaultListSize per level; fragments on a union count each type, @skip drops a field', () => {
  const { est } = tallies(
    'query ($s: Boolean!) { grid { ... on User { id name } ... on Bot { id } } feed(first: 2) @skip(if: $s) { __typename } }',
    undefined,
    { s: true },
  );
  expect(est).toEqual({ cost: 100 * 100, counts: { 'User-id': 100 * 100 } });
});

test('a list is tallied item by item: an item naming its type counts for that type only, one that does not for every variant, nulls not at all', () => {
  const { act } = tallies('{ feed(first: 5) { ... on User { id } ... on Bot { id } } grid { ... on User { id } } }', {
    feed: [{ __typename: 'User', id: 'u' }, { id: 'x' }, { __typename: 'Bot', id: 'b' }, null],
    grid: [[{ id: '1' }, null], [], [{ __typename: 'Bot' }, { __typename: 'User', id: '2' }]],
  });
  // feed: User-id for the User and the item without __typename; grid: the item without it and the User.
  expect(act!.counts).toEqual({ 'User-id': 4 });
  // Objects of a list cost 1 each (null items are no values): feed 3, grid 3; the ids are free.
  expect(act!.cost).toBe(6);
});

test('the directive is read strictly: a limit without a window, an identity it does not know, a definition missing', () => {
  const build = (sdl: string) => () => new SchemaLimits(buildSchema(sdl, { assumeValidSDL: true }), resolveOptions({}));
  expect(build(`${rateLimitDirective} type Query { a: Int @rateLimit(limit: 1) }`)).toThrow(ConfigError);
  expect(build(`${rateLimitDirective} type Query { a: Int @rateLimit(limit: 1, window: "1m", identity: "team") }`)).toThrow(/identity/);
  expect(build(`${rateLimitDirective} type Query { a: Int @rateLimit(cost: -1) }`)).toThrow(/cost/);
  expect(build('directive @other on FIELD_DEFINITION type Query { a: Int @rateLimit(limit: 1, window: "1m") }')).toThrow(
    /does not define it/,
  );
});

test('coordinate kinds are injective and bounded: fields, types, and long names hashed', () => {
  expect([kindOf('Query.search'), kindOf('Mutation')]).toEqual(['Query-search', 'Mutation-']);
  const long = kindOf(`Query.${'x'.repeat(40)}`);
  expect(long).toMatch(/^-[A-Za-z0-9_-]{31}$/);
  expect(kindOf(`Query.${'x'.repeat(41)}`)).not.toBe(long);
});
