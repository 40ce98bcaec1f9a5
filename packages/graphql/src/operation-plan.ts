import {
  getDirectiveValues,
  getNamedType,
  getNullableType,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isAbstractType,
  isCompositeType,
  isListType,
  isObjectType,
  Kind,
  valueFromAST,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { FieldInfo, SchemaLimits } from './schema-limits';

/*
 * An operation as the limits see it (docs/graphql.md, "What an operation costs"): its fields collected as the
 * executor collects them (fragments resolved, the same response key merged into one field, @skip and
 * @include applied, aliases kept apart), each with the list size it multiplies its children by. From the
 * plan come the static estimate (estimate.ts) and, once execution ends, the actual cost (actual.ts).
 *
 * A plan is bounded: building stops at MAX_NODES fields, an operation that large is refused as too costly.
 */

/** One field at one response key, for objects of `on` (its parent, or a fragment's type condition). */
export interface PlannedField<Context> {
  readonly key: string;
  /** The type the field is selected on: an object type, or an abstract one (every implementation). */
  readonly on: GraphQLCompositeType;
  readonly info: FieldInfo<Context>;
  /** List levels of the field's type (0: not a list). */
  readonly listDepth: number;
  /** Items per resolved value, from a size argument, the enclosing connection's or defaultListSize (1 when not a list). */
  readonly size: number;
  /** The fields selected on each value, for a field of composite type. */
  readonly children: PlannedField<Context>[] | undefined;
  /** Whether it or a field below it costs or counts against a limit: a tally skips a field that does not. */
  readonly counted: boolean;
  /** The children that are counted (undefined when none is): what a tally of a result walks. */
  readonly tallied: PlannedField<Context>[] | undefined;
  /** The name of `on` when it is an object type (a result's `__typename` is compared with it). */
  readonly onObject: string | undefined;
}

/** Fields planned per operation before it is refused as too costly: a plan is never larger. */
export const MAX_NODES = 50_000;

export class TooLarge extends Error {}

interface Context<C> {
  readonly schema: GraphQLSchema;
  readonly limits: SchemaLimits<C>;
  readonly fragments: Readonly<Record<string, FragmentDefinitionNode>>;
  readonly variables: Readonly<Record<string, unknown>>;
  readonly listArguments: readonly string[];
  readonly defaultListSize: number;
  nodes: number;
}

/** The fields of `operation`, planned; throws TooLarge past MAX_NODES fields. */
export function planOperation<C>(
  limits: SchemaLimits<C>,
  fragments: Readonly<Record<string, FragmentDefinitionNode>>,
  operation: OperationDefinitionNode,
  variables: Readonly<Record<string, unknown>> | null | undefined,
  options: { listArguments: readonly string[]; defaultListSize: number },
): PlannedField<C>[] {
  const schema = limits.schema;
  const root = schema.getRootType(operation.operation);
  if (!root) return [];
  const ctx: Context<C> = { schema, limits, fragments, variables: variables ?? {}, ...options, nodes: 0 };
  return plan(ctx, root, [operation.selectionSet], undefined);
}

function included(ctx: Context<unknown>, node: FieldNode | { directives?: FieldNode['directives'] }): boolean {
  if (!node.directives?.length) return true;
  const skip = getDirectiveValues(GraphQLSkipDirective, node, ctx.variables as Record<string, unknown>);
  if (skip?.['if'] === true) return false;
  const include = getDirectiveValues(GraphQLIncludeDirective, node, ctx.variables as Record<string, unknown>);
  return include?.['if'] !== false;
}

/** Collected fields: response key, then the type each variant is selected on, then its nodes. */
type Collected = Map<string, Map<GraphQLCompositeType, FieldNode[]>>;

function collect(ctx: Context<unknown>, on: GraphQLCompositeType, set: SelectionSetNode, out: Collected, seen: Set<string>): void {
  for (const selection of set.selections) {
    if (!included(ctx, selection)) continue;
    if (selection.kind === Kind.FIELD) {
      if (selection.name.value.startsWith('__')) continue; // introspection: free, and never limited
      const key = selection.alias?.value ?? selection.name.value;
      let variants = out.get(key);
      if (!variants) out.set(key, (variants = new Map()));
      const nodes = variants.get(on);
      if (nodes) nodes.push(selection);
      else variants.set(on, [selection]);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const cond = selection.typeCondition ? ctx.schema.getType(selection.typeCondition.name.value) : on;
      if (cond && isCompositeType(cond)) collect(ctx, narrower(on, cond), selection.selectionSet, out, seen);
    } else {
      const name = selection.name.value;
      if (seen.has(name)) continue; // the executor spreads a fragment once per selection set
      seen.add(name);
      const fragment = ctx.fragments[name];
      const cond = fragment && ctx.schema.getType(fragment.typeCondition.name.value);
      if (fragment && cond && isCompositeType(cond)) collect(ctx, narrower(on, cond), fragment.selectionSet, out, seen);
    }
  }
}

/** The type a fragment's fields are selected on: the fragment's condition unless the parent is an object type. */
function narrower(parent: GraphQLCompositeType, cond: GraphQLCompositeType): GraphQLCompositeType {
  return isObjectType(parent) ? parent : cond;
}

/** The size a field's arguments ask for (the first of listArguments with an integer value), else undefined. */
function askedSize(ctx: Context<unknown>, def: GraphQLField<unknown, unknown>, node: FieldNode): number | undefined {
  for (const name of ctx.listArguments) {
    const arg = node.arguments?.find((a) => a.name.value === name);
    const argDef = def.args.find((a) => a.name === name);
    if (!arg || !argDef) continue;
    const value: unknown = valueFromAST(arg.value, argDef.type, ctx.variables as Record<string, unknown>);
    if (typeof value === 'number' && Number.isFinite(value)) return Math.max(0, Math.min(Math.trunc(value), 1e9));
  }
  return undefined;
}

function plan<C>(
  ctx: Context<C>,
  on: GraphQLCompositeType,
  sets: readonly SelectionSetNode[],
  pending: number | undefined,
): PlannedField<C>[] {
  const collected: Collected = new Map();
  const seen = new Set<string>();
  for (const set of sets) collect(ctx as Context<unknown>, on, set, collected, seen);
  const out: PlannedField<C>[] = [];
  for (const [key, variants] of collected) {
    for (const [variantOn, nodes] of variants) {
      if (++ctx.nodes > MAX_NODES) throw new TooLarge();
      const first = nodes[0]!;
      const name = first.name.value;
      // A union has no fields but __typename; an abstract type's fields are its interface's.
      if (isAbstractType(variantOn) && !('getFields' in variantOn)) continue;
      const def = (variantOn as Exclude<GraphQLCompositeType, { getTypes: unknown }>).getFields()[name];
      if (!def) continue;
      let listDepth = 0;
      for (let t = getNullableType(def.type); isListType(t); t = getNullableType(t.ofType)) listDepth++;
      const asked = askedSize(ctx as Context<unknown>, def, first);
      const size = listDepth === 0 ? 1 : (asked ?? pending ?? ctx.defaultListSize) * ctx.defaultListSize ** (listDepth - 1);
      const named = getNamedType(def.type);
      const childSets = nodes.flatMap((n) => (n.selectionSet ? [n.selectionSet] : []));
      const children = isCompositeType(named) ? plan(ctx, named, childSets, listDepth === 0 ? asked : undefined) : undefined;
      const info = ctx.limits.field(variantOn as never, name);
      const counted = info.cost > 0 || info.limited.length > 0 || (children?.some((c) => c.counted) ?? false);
      const tallied = children?.filter((c) => c.counted);
      const onObject = isObjectType(variantOn) ? variantOn.name : undefined;
      out.push({ key, on: variantOn, info, listDepth, size, children, counted, tallied: tallied?.length ? tallied : undefined, onObject });
    }
  }
  return out;
}
