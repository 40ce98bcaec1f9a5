import { isAbstractType, isObjectType, type GraphQLSchema } from 'graphql';
import type { PlannedField } from './operation-plan';

/*
 * What an operation costs and how many selections of each limited coordinate it makes: estimated from its
 * plan before it runs (list sizes from arguments), and counted from its result once it has run (the lists'
 * actual lengths). A field's cost is paid per value it resolves to (each item of a list); a coordinate counts
 * once per resolver call. Sums stop at CAP (core's largest cost of one unit): past it, nothing fits anyway.
 */

/** Core's largest cost of one unit in one call. */
export const CAP = 1_000_000_000;

export interface Tally {
  cost: number;
  /** Selections (resolver calls) per limited coordinate's kind. */
  readonly counts: Map<string, number>;
}

const add = (a: number, b: number): number => Math.min(CAP, a + b);

/**
 * Counts `calls` resolver calls of `field` giving `values` values. `typename`: the object's runtime type, when
 * the result names it: a field selected through an interface then counts against that type's limits only.
 */
function count(tally: Tally, field: PlannedField<unknown>, calls: number, values: number, typename?: string): void {
  tally.cost = add(tally.cost, Math.min(CAP, field.info.cost * values));
  for (const l of field.info.limited) {
    if (typename !== undefined && l.owner !== typename && l.owner !== field.on.name) continue;
    tally.counts.set(l.kind, add(tally.counts.get(l.kind) ?? 0, calls));
  }
}

/** The static estimate: `calls` instances of each field's parent, each list at its planned size. */
export function estimate(fields: readonly PlannedField<unknown>[], calls = 1, tally: Tally = { cost: 0, counts: new Map() }): Tally {
  for (const field of fields) {
    if (!field.counted) continue;
    const values = Math.min(CAP, calls * field.size);
    count(tally, field, calls, values);
    if (field.children && values > 0) estimate(field.children, values, tally);
  }
  return tally;
}

/** The items of a resolved value: a list's leaves (nested lists flattened), else the value itself. */
function itemsOf(value: unknown, depth: number, out: unknown[]): unknown[] {
  if (depth > 0 && Array.isArray(value)) for (const item of value) itemsOf(item, depth - 1, out);
  else if (depth === 0 && value !== null && value !== undefined) out.push(value);
  return out;
}

/** Whether an object whose type is `typename` (when the client asked for it) can hold `field`. */
function applies(schema: GraphQLSchema, field: PlannedField<unknown>, typename: string | undefined): boolean {
  if (typename === undefined) return true; // not asked for: count every variant (never under the truth)
  if (field.onObject !== undefined) return field.onObject === typename;
  const on = field.on;
  const type = schema.getType(typename);
  return isAbstractType(on) && isObjectType(type) && schema.isSubType(on, type);
}

/**
 * The actual tally from a result's data: each response key present was resolved (a null included: its
 * resolver ran), each list at its length. Without `__typename`, a key selected on several types of an
 * abstract field counts for each of them.
 */
export function actual(
  schema: GraphQLSchema,
  fields: readonly PlannedField<unknown>[],
  data: unknown,
  tally: Tally = { cost: 0, counts: new Map() },
): Tally {
  walk(schema, fields, [data], tally);
  return tally;
}

/**
 * actual() over the objects of one level of the result that `fields` were selected on (every item of a list
 * at once): a field's calls and values are summed over them and counted once, then the level below is walked
 * the same way. Only the fields that count are walked (a field that does not has nothing below that does).
 */
function walk(schema: GraphQLSchema, fields: readonly PlannedField<unknown>[], objects: readonly unknown[], tally: Tally): void {
  const calls = new Array<number>(fields.length).fill(0);
  const values = new Array<number>(fields.length).fill(0);
  const below: unknown[][] = [];
  for (let o = 0; o < objects.length; o++) {
    const object = objects[o] as Record<string, unknown>;
    if (typeof object !== 'object' || object === null) continue;
    const typename = object['__typename'];
    const runtime = typeof typename === 'string' ? typename : undefined;
    for (let f = 0; f < fields.length; f++) {
      const field = fields[f]!;
      if (!field.counted) continue;
      const value = object[field.key];
      if ((value === undefined && !(field.key in object)) || !applies(schema, field, runtime)) continue;
      const next = field.tallied ? (below[f] ??= []) : undefined;
      let n = 1;
      if (field.listDepth === 0) next?.push(value);
      else {
        const items = field.listDepth === 1 && Array.isArray(value) ? (value as unknown[]) : itemsOf(value, field.listDepth, []);
        n = 0;
        for (let i = 0; i < items.length; i++) {
          if (items[i] === null || items[i] === undefined) continue;
          n++;
          next?.push(items[i]);
        }
      }
      // An object that names its type counts against that type's limits only: counted on its own.
      if (runtime !== undefined) count(tally, field, 1, n, runtime);
      else {
        calls[f]! += 1;
        values[f]! += n;
      }
    }
  }
  for (let f = 0; f < fields.length; f++) {
    if (calls[f]! > 0) count(tally, fields[f]!, calls[f]!, values[f]!);
    if (below[f]?.length) walk(schema, fields[f]!.tallied!, below[f]!, tally);
  }
}
