import { createHash } from 'node:crypto';

/*
 * Every limited schema coordinate becomes an identifier kind and a unit of the one limiter that checks an
 * operation (docs/graphql.md, "How it is checked"): its rules are `{ for: kind, unit: kind }`, so they apply
 * only to that coordinate's identifier (`<kind>:<identity>`) and count only that coordinate's selections.
 * Kinds and units are `[A-Za-z0-9_-]{1,32}` (core's KIND). The mapping is injective:
 *
 * - a field `Type.field` is `Type-field` (GraphQL names never hold '-', so no two fields meet);
 * - a type `Type` (one budget for every field of the type) is `Type-` (no field name is empty);
 * - the operation's own rules are kind `-op` and units `requests` and `cost` (a coordinate's kind never
 *   starts with '-' unless hashed, and always holds one '-');
 * - a kind that would pass 32 characters is '-' and 31 characters of the SHA-256 of the coordinate
 *   (base64url), never `-op`.
 */

/** The identifier kind of the operation's own rules (requests, cost). */
export const OPERATION_KIND = '-op';

/** The unit of an operation's cost. */
export const COST_UNIT = 'cost';

/** The unit of the operation's requests rules. */
export const REQUESTS_UNIT = 'requests';

const MAX = 32;

/** The kind (and unit) of a coordinate: `Type.field` or `Type`. */
export function kindOf(coordinate: string): string {
  const dot = coordinate.indexOf('.');
  const plain = dot === -1 ? `${coordinate}-` : `${coordinate.slice(0, dot)}-${coordinate.slice(dot + 1)}`;
  if (plain.length <= MAX) return plain;
  return `-${createHash('sha256')
    .update(coordinate)
    .digest('base64url')
    .slice(0, MAX - 1)}`;
}
