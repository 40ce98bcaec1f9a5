import {
  getDirectiveValues,
  type DirectiveNode,
  type GraphQLDirective,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
} from 'graphql';
import { ConfigError, type RuleInput } from '@floodgate/core/adapter';
import type { Identity } from './options';

/**
 * The `@rateLimit` directive's definition, to add to your type definitions. Repeatable: one use per rule.
 * On a field, it limits that field's selections; on an object type, every field of the type shares one budget.
 */
export const rateLimitDirective = /* GraphQL */ `
  """
  Floodgate: limit selections of this field (or of any field of this type) per identity, and/or set its cost.
  """
  directive @rateLimit(
    "Selections admitted per window."
    limit: Int
    "The window: '500ms', '10s', '1m', '1h', '1d'."
    window: String
    "Whose budget: 'user' (the signed-in user, else the client address) or 'ip'."
    identity: String
    "The field's cost per value it resolves to (on a type: every field of it)."
    cost: Int
  ) repeatable on FIELD_DEFINITION | OBJECT | INTERFACE
`;

/** What the directive's uses on one coordinate say. */
export interface DirectiveLimits {
  rules: RuleInput[];
  identity: Identity<never> | undefined;
  cost: number | undefined;
}

type Annotated = GraphQLField<unknown, unknown> | GraphQLNamedType;

function uses(element: Annotated, name: string): DirectiveNode[] {
  const nodes = [element.astNode, ...('extensionASTNodes' in element ? element.extensionASTNodes : [])];
  return nodes.flatMap((node) => (node?.directives ?? []).filter((d) => d.name.value === name));
}

/** The directive's uses on `element` (the coordinate `coordinate`), or undefined when there are none. */
export function readDirective(schema: GraphQLSchema, name: string, element: Annotated, coordinate: string): DirectiveLimits | undefined {
  const found = uses(element, name);
  if (found.length === 0) return undefined;
  const definition: GraphQLDirective | null | undefined = schema.getDirective(name);
  if (!definition)
    throw new ConfigError(
      'directive',
      `@${name} is used on ${coordinate} but the schema does not define it: add rateLimitDirective to your type definitions`,
    );
  const at = `@${name} on ${coordinate}`;
  const out: DirectiveLimits = { rules: [], identity: undefined, cost: undefined };
  for (const node of found) {
    const args = getDirectiveValues(definition, { directives: [node] }) ?? {};
    const { limit, window, identity, cost } = args as { limit?: number; window?: string; identity?: string; cost?: number };
    if ((limit === undefined) !== (window === undefined))
      throw new ConfigError(at, 'needs both limit and window for a rule (or neither, with cost alone)');
    if (limit !== undefined && window !== undefined) out.rules.push({ limit, window });
    if (identity !== undefined) {
      if (identity !== 'user' && identity !== 'ip') throw new ConfigError(`${at}.identity`, `must be 'user' or 'ip'; got '${identity}'`);
      out.identity = identity;
    }
    if (cost !== undefined) {
      if (!Number.isInteger(cost) || cost < 0) throw new ConfigError(`${at}.cost`, `must be a non-negative integer; got ${cost}`);
      out.cost = cost;
    }
  }
  return out;
}
