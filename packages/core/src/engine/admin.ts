import { ConfigError, StoreError, describeValue } from '../kernel/errors';
import { parseDuration } from '../config/rules';
import { encodeIdentifier, type KeyScheme } from '../scripts/keys';
import type { Store } from '../stores/types';
import type { ResolvedOptions } from './options';
import { evictEverywhere } from './block-cache';
import type { OpenAccount } from './open-account';
import { nowOf, type PlanState } from './plan';
import { assertCheckable } from './override-identifiers';

export interface BlockOptions {
  /** Required and finite: ms or a duration string. */
  duration: number | string;
  reason?: string;
}

/** What the admin calls (reset, block, unblock) need of a limiter. */
export interface AdminParts {
  readonly opts: ResolvedOptions;
  readonly store: Store;
  readonly keys: KeyScheme;
  /** The default plan: its planner validates identifiers and pads the index's time arguments. */
  readonly main: PlanState;
  /** With `failure: 'open'` on a remote store: what the policy admitted (open-account.ts). */
  readonly open: OpenAccount | undefined;
}

/** A store call of an admin operation (or a refund): a failure as a StoreError, a rejected command included. */
export async function storeCall(op: () => Promise<void> | void): Promise<void> {
  try {
    await op();
  } catch (err) {
    throw err instanceof StoreError ? err : new StoreError('reply', 'Redis rejected the command', err);
  }
}

/** Forgets this limiter's counts for these identifiers (manual blocks stay: see unblock). */
export async function reset(parts: AdminParts, identifiers: string | readonly string[]): Promise<void> {
  const { opts, store, keys } = parts;
  const ids = parts.main.planner.identifiers(identifiers);
  // An address in a form no check holds: the operator meant another identifier, whose counts would stay.
  for (const id of ids) assertCheckable(id, opts.prefix, opts.name, 'reset() of', 'have counted it');
  // Its counts: the rules' state and, with a lockout, the denials counted toward one (not a lockout in force: a block).
  const stateKeys = ids.flatMap((id) => {
    const enc = encodeIdentifier(id);
    return opts.lockout ? [keys.state(enc), keys.lockout(enc)] : [keys.state(enc)];
  });
  evictEverywhere(opts.prefix, opts.name, ids);
  parts.open?.forget(ids, parts.main.planner.allUnits);
  await storeCall(() => store.delete(stateKeys));
}

/** Denies every check of this identifier, in every limiter with this prefix, for `duration`. */
export async function block(parts: AdminParts, identifier: string, options: BlockOptions): Promise<void> {
  const { opts, store, keys, main } = parts;
  const [id] = main.planner.identifiers(identifier);
  // An address in a form no check holds: a block no check would see, the client meant left admitted.
  assertCheckable(id!, opts.prefix, opts.name, 'block() of', 'see the block');
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('duration', "is required: block(identifier, { duration: '10m', reason })");
  }
  const durationMs = parseDuration(options.duration, 'duration');
  const reason = options.reason ?? '';
  if (typeof reason !== 'string' || reason.length > 256) {
    throw new ConfigError('reason', `must be a string of at most 256 characters; got ${describeValue(reason)}`);
  }
  const enc = encodeIdentifier(id!);
  const { planner } = main;
  await storeCall(() => store.block(keys.block(enc), keys.index(enc), durationMs, reason, planner.nowArg(), planner.pad, nowOf(opts)));
}

/** Lifts a block (block()'s or a lockout's) and forgets this limiter's lockout escalation for the identifier. */
export async function unblock(parts: AdminParts, identifier: string): Promise<void> {
  const { opts, store, keys, main } = parts;
  const [id] = main.planner.identifiers(identifier);
  evictEverywhere(opts.prefix, undefined, [id!]);
  const enc = encodeIdentifier(id!);
  // A lockout is a block: lifted, and this limiter's escalation for the identifier forgotten with it; the
  // block's entry in the block index goes in the same call.
  const others = opts.lockout ? [keys.lockout(enc)] : [];
  const { planner } = main;
  await storeCall(() => store.unblock(keys.block(enc), keys.index(enc), others, planner.nowArg(), planner.pad, nowOf(opts)));
}
