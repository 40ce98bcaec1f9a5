import type { Decision, DecisionSource, PairState } from '../kernel/decision';
import { StoreError } from '../kernel/errors';
import { DEFAULT_UNIT, type Rule } from '../config/rules';

/*
 * The script's reply, decoded in one place (docs/design.md, section 4): a check's reply into a Decision, a
 * split Cluster check's per-slot replies into the reply one Redis would give. The JavaScript twin that
 * builds replies is scripts/frame.ts; the Lua that builds them, scripts/compiler/.
 */

/** A script's reply: flat integers and strings, the same in RESP2 and RESP3. */
export type Reply = Array<number | string>;

/** The number of rules an identifier's mask applies ('1's). */
export function rulesIn(mask: string): number {
  let n = 0;
  for (let k = 0; k < mask.length; k++) if (mask.charCodeAt(k) === 49) n++;
  return n;
}

/** Reads a check's reply into a Decision. */
export function decodeReply(
  reply: Reply,
  ids: readonly string[],
  ruleLists: readonly (readonly number[])[],
  rules: readonly Rule[],
  costInput: number | Readonly<Record<string, number>>,
  source: DecisionSource,
): Decision {
  // A cost per unit: the decision's cost is the binding pair's unit's (kernel/decision.ts).
  const perUnit = typeof costInput === 'number' ? undefined : costInput;
  const cost = typeof costInput === 'number' ? costInput : 0;
  const states: PairState[] = [];
  let p = 3;
  let blockMs = 0;
  let blockedId: string | undefined;
  let blockReason = '';
  for (const id of ids) {
    const ms = Number(reply[p]);
    if (ms > blockMs) {
      blockMs = ms;
      blockedId = id;
      blockReason = String(reply[p + 1]);
    }
    p += 2;
  }
  ids.forEach((identifier, i) => {
    for (const j of ruleLists[i]!) {
      const rule = rules[j]!;
      const retryAfterMs = Number(reply[p + 2]);
      const state: PairState = {
        identifier,
        limit: rule.limit,
        windowMs: rule.windowMs,
        remaining: Number(reply[p]),
        resetMs: Number(reply[p + 1]),
        allowed: retryAfterMs === 0,
        retryAfterMs,
      };
      if (rule.unit !== undefined) state.unit = rule.unit;
      states.push(state);
      p += 3;
    }
  });

  const withCosts = (d: Decision, binding: PairState | undefined): Decision => {
    if (perUnit === undefined) return d;
    d.cost = binding === undefined ? Math.max(0, ...Object.values(perUnit)) : (perUnit[binding.unit ?? DEFAULT_UNIT] ?? 0);
    d.costs = perUnit;
    return d;
  };
  if (blockedId !== undefined) {
    const own = leastRemaining(states.filter((s) => s.identifier === blockedId));
    return withCosts(
      {
        allowed: false,
        source,
        reason: 'blocked',
        identifier: blockedId,
        limit: own?.limit ?? Infinity,
        windowMs: own?.windowMs ?? 0,
        remaining: 0,
        resetMs: Math.max(blockMs, own?.resetMs ?? 0),
        resetAt: Number(reply[0]) + Math.max(blockMs, own?.resetMs ?? 0),
        retryAfterMs: blockMs,
        cost,
        states,
        blockReason,
      },
      own,
    );
  }
  const allowed = reply[1] === 1 || reply[1] === '1';
  const binding = allowed ? leastRemaining(states) : longestRetry(states);
  if (binding === undefined) {
    return withCosts(
      { allowed, source, limit: Infinity, windowMs: 0, remaining: Infinity, resetMs: 0, retryAfterMs: 0, cost, states },
      undefined,
    );
  }
  const decision: Decision = {
    allowed,
    source,
    identifier: binding.identifier,
    limit: binding.limit,
    windowMs: binding.windowMs,
    remaining: binding.remaining,
    resetMs: binding.resetMs,
    resetAt: Number(reply[0]) + binding.resetMs,
    retryAfterMs: allowed ? 0 : binding.retryAfterMs,
    cost,
    states,
  };
  if (!allowed) decision.reason = 'limit';
  return withCosts(decision, binding);
}

/** The allowed binding pair: least remaining; on a tie, the one that takes longest to refill. */
function leastRemaining(states: readonly PairState[]): PairState | undefined {
  let best: PairState | undefined;
  for (const s of states) {
    if (!best || s.remaining < best.remaining || (s.remaining === best.remaining && s.resetMs > best.resetMs)) best = s;
  }
  return best;
}

/** The denied binding pair: the denying pair with the largest retry time. */
function longestRetry(states: readonly PairState[]): PairState | undefined {
  let best: PairState | undefined;
  for (const s of states) {
    if (!s.allowed && (!best || s.retryAfterMs > best.retryAfterMs)) best = s;
  }
  return best;
}

/** What a split check's slot returns per identifier that consumed, to give its writes back. */
export interface UndoReceipt {
  /** The algorithm's receipt (AlgorithmUndo): what to give back once the key has changed since. */
  receipt: string;
  /** sha1 of the key as the check left it; '' when the check wrote nothing there. */
  digest: string;
  /** The key before the check: 'hash', 'list' or 'none' (absent). */
  type: string;
  /** Its expiry then, ms since the epoch on Redis's clock; -1 for none. */
  expireAt: number;
  /** Its fields and values (HGETALL order) or entries, each as fg_enc wrote it. */
  items: string[];
}

/** One slot's reply to the split frame (frame.ts), per identifier of the slot. */
export interface SlotReply {
  now: number;
  /** [blockMs, blockReason] */
  blocks: Reply[];
  /** The identifier's pairs before any commit. */
  pre: Reply[];
  consumed: boolean;
  /** When consumed: the pairs after the commit at cost 0, and at the cost. */
  at0: Reply[];
  atCost: Reply[];
  undo: UndoReceipt[];
}

/** Reads one slot's split-frame reply; `masks` are its identifiers' masks, in the slot's order. */
export function parseSlotReply(r: Reply, masks: readonly string[]): SlotReply {
  const reply: SlotReply = { now: Number(r[0]), blocks: [], pre: [], consumed: Number(r[2]) === 1, at0: [], atCost: [], undo: [] };
  let p = 3;
  for (let k = 0; k < masks.length; k++, p += 2) reply.blocks.push([r[p]!, r[p + 1]!]);
  for (const section of reply.consumed ? [reply.pre, reply.at0, reply.atCost] : [reply.pre]) {
    for (const mask of masks) {
      const n = 3 * rulesIn(mask);
      section.push(r.slice(p, p + n));
      p += n;
    }
  }
  if (!reply.consumed) return reply;
  const receipts = r.slice(p, p + masks.length).map(String);
  p += masks.length;
  for (const receipt of receipts) {
    const n = Number(r[p + 3]);
    reply.undo.push({
      receipt,
      digest: String(r[p]),
      type: String(r[p + 1]),
      expireAt: Number(r[p + 2]),
      items: r.slice(p + 4, p + 4 + n).map(String),
    });
    p += 4 + n;
  }
  if (p !== r.length) throw new StoreError('reply', `unexpected split-frame reply (${r.length} values, ${p} read)`);
  return reply;
}

/**
 * The reply one Redis would give for a whole check split across slots (identifiers in the caller's order),
 * and whether the whole check consumes: it consumes as one Redis would (a check of cost > 0, nothing
 * blocked in any slot, every pair admits the cost, or penalty), and then reports the pairs after the
 * commit, at 0 when admitted and at the cost when penalty consumed a denial; otherwise before any commit.
 */
export function mergeSlotReplies(
  slots: readonly { ids: readonly number[]; reply: SlotReply }[],
  op: string,
  cost: number,
  penalty: boolean,
): { reply: Reply; consumed: boolean } {
  const nIds = slots.reduce((n, s) => n + s.ids.length, 0);
  const blocks: Reply[] = [];
  const evals: Reply[] = [];
  let now = 0;
  let blocked = false;
  let ok = true;
  for (const { ids, reply: r } of slots) {
    now = Math.max(now, r.now);
    ids.forEach((i, k) => {
      blocks[i] = r.blocks[k]!;
      evals[i] = r.pre[k]!;
      if (Number(r.blocks[k]![0]) > 0) blocked = true;
      for (let x = 2; x < r.pre[k]!.length; x += 3) if (Number(r.pre[k]![x]) > 0) ok = false;
    });
  }
  const consumed = op === 'c' && cost > 0 && !blocked && (ok || penalty);
  if (consumed) {
    for (const { ids, reply: r } of slots) {
      // Every slot consumed: its own part met the same condition.
      if (!r.consumed) throw new StoreError('reply', 'a slot did not consume in a check that consumes');
      ids.forEach((i, k) => {
        evals[i] = ok ? r.at0[k]! : r.atCost[k]!;
      });
    }
  }
  const reply: Reply = [now, ok && !blocked ? 1 : 0, consumed ? 1 : 0];
  for (let i = 0; i < nIds; i++) reply.push(...blocks[i]!);
  for (let i = 0; i < nIds; i++) reply.push(...evals[i]!);
  return { reply, consumed };
}
