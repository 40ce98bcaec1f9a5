import type { Program } from '../scripts/compiler';
import { MASKS_AT } from '../scripts/frame';
import type { Reply } from '../scripts/reply';
import { scriptOf, type ClientAdapter, type Script } from './clients';
import type { Flush } from './coalesce';
import { TurnBatches, type OutgoingBatch } from './turn-batches';
import { realRuntime, type Runtime } from '../kernel/runtime';

export { BATCH_MAX } from './turn-batches';

/*
 * Batching (docs/design.md, section 4, "Batches"): the checks of one program that a server starts in one turn of the
 * event loop travel to one Redis in one script call instead of one call each. The batch script runs the
 * program's own script once per check, in arrival order, each with its own KEYS and ARGV, and answers every
 * check's reply: each check is decided on its own, atomically (a script runs alone), exactly as the same
 * checks sent one after another would be, but the EVALSHA dispatch, the client's per-command work, the
 * reply's framing and a promise per command are paid once per batch, on both sides of the wire.
 *
 * A batch leaves at the end of the turn, or as soon as it holds BATCH_MAX checks (WHOLE_MAX in a turn whose
 * batches were asked to stay whole: keepWhole(), stores/turn-batches.ts).
 * A batch of one is sent as the program's own script. An error in one check (a wrong-type key, say) is that
 * check's error alone: the others' replies stand. The deadline stays per check (stores/redis.ts); a batch
 * sent late because this process was busy is seen as such (its Flush says when it left).
 *
 * On a Cluster, a batch holds the checks of one hash slot (a check whose keys span slots is split and
 * not batched: stores/cluster.ts): checks of one identifier, or of every identifier with `colocate`.
 */

/**
 * The batch script of a program. What every check of a program shares is sent once, what each check has of
 * its own as one argument (the client and Redis pay per argument):
 *   ARGV[1] the number of checks N; ARGV[2] and ARGV[3] the frame's penalty (its ARGV[3]) and TTL padding
 *   (ARGV[5]), the same for every check of the program (one planner made them all); then per check one
 *   argument "nk,op,cost,now,mask1,mask2,...": its key count and the rest of its frame ARGV (none of which
 *   can hold a comma). KEYS: every check's KEYS in order.
 * A check whose clock (now) is '' (Redis TIME) gets the batch's one reading of TIME.
 *
 * Reply: one flat array. Flat, not an array per check: a client decodes a nested array item by item at a
 * cost per array. It is the checks' own replies (scripts/frame.ts: now, allowed, consumed, per identifier
 * blockMs and blockReason, then the rest) with what a client would decode over and over left out, since
 * the client's decoding costs about as much per item as the rest of a check's work put together:
 *   first the batch's reading of TIME in ms (0 when no check read it); then per check, in order, either
 *   -1 and the string 'ERR ...' (it raised or answered an error), or:
 *   2n + t, where n is the number of items of the check's own reply and t is 1 when its `now` was the
 *     batch's reading (then left out), 0 when `now` follows;
 *   allowed + 2 * consumed (one item for the two);
 *   per identifier: blockMs when it has no block reason (0 when not blocked: the usual case, one item, not
 *     two), else -blockMs - 1 and the reason;
 *   then the rest of its reply (the pairs' values, receipts) as the check answered them.
 * The Batcher (below) rebuilds each check's reply exactly, with the same types, as a check sent alone gets.
 */
export function batchLua(program: Program): string {
  return `local check = function(KEYS, ARGV)
${program.lua}
end
local N = tonumber(ARGV[1])
local KEYS_PER_ID = ${keysPerId(program)}
local find, sub = string.find, string.sub
local out, o, ko, now, nowMs = { 0 }, 1, 0, nil, nil
for i = 1, N do
  local spec, f, n, pos = ARGV[3 + i], {}, 0, 1
  while true do
    local c = find(spec, ',', pos, true)
    n = n + 1
    if c == nil then f[n] = sub(spec, pos); break end
    f[n] = sub(spec, pos, c - 1)
    pos = c + 1
  end
  local k, nk = {}, tonumber(f[1])
  for j = 1, nk do k[j] = KEYS[ko + j] end
  ko = ko + nk
  local t = f[4]
  if t == '' then
    if now == nil then
      local r = redis.call('TIME')
      nowMs = tonumber(r[1]) * 1000 + math.floor(tonumber(r[2]) / 1000)
      now = tostring(nowMs)
      out[1] = nowMs
    end
    t = now
  end
  local a = { f[2], f[3], ARGV[2], t, ARGV[3] }
  for q = 5, n do a[q + 1] = f[q] end
  local ok, r = pcall(check, k, a)
  local err
  if not ok then
    err = type(r) == 'table' and r.err or r
  elseif type(r) ~= 'table' then
    err = 'floodgate: a reply of type ' .. type(r)
  elseif r.err then
    err = r.err
  end
  if err == nil then
    local n, ids = #r, nk / KEYS_PER_ID
    if nowMs ~= nil and r[1] == nowMs then
      out[o + 1] = 2 * n + 1
      o = o + 1
    else
      out[o + 1], out[o + 2] = 2 * n, r[1]
      o = o + 2
    end
    out[o + 1] = r[2] + 2 * r[3]
    o = o + 1
    for i = 1, ids do
      local bms, reason = r[2 * i + 2], r[2 * i + 3]
      if reason == '' then
        out[o + 1] = bms
        o = o + 1
      else
        out[o + 1], out[o + 2] = -bms - 1, reason
        o = o + 2
      end
    end
    for q = 2 * ids + 4, n do
      o = o + 1
      out[o] = r[q]
    end
  else
    out[o + 1] = -1
    out[o + 2] = 'ERR ' .. tostring(err)
    o = o + 2
  end
end
return out
`;
}

/** KEYS per identifier of a program's check (scripts/frame.ts): state and block, and with a lockout two more. */
const keysPerId = (program: Program): number => (program.lockout === undefined ? 2 : 4);

/**
 * One check's reply out of a batch's (`batchLua` says how it is written), from its head at `at`, for a
 * check of `ids` identifiers; undefined when the items do not add up (a malformed reply).
 */
function rebuild(all: readonly unknown[], at: number, ids: number): { reply: Reply; next: number } | undefined {
  const head = all[at] as number;
  const n = Math.floor(head / 2);
  const rest = n - 3 - 2 * ids;
  if (rest < 0) return undefined;
  let p = at + 1;
  const reply: Reply = [head % 2 === 1 ? (all[0] as number) : (all[p++] as number | string)];
  const flags = all[p++];
  if (typeof flags !== 'number') return undefined;
  reply.push(flags & 1, flags >> 1);
  for (let k = 0; k < ids; k++) {
    const v = all[p++];
    if (typeof v !== 'number') return undefined;
    if (v >= 0) reply.push(v, '');
    else reply.push(-v - 1, all[p++] as string);
  }
  for (let k = 0; k < rest; k++) reply.push(all[p++] as number | string);
  return p <= all.length ? { reply, next: p } : undefined;
}

interface Pending {
  keys: string[];
  argv: (string | number)[];
  resolve(reply: Reply): void;
  reject(err: unknown): void;
}

/** A check's error inside a batch: the server's words, as the client would have raised them alone. */
export class BatchedReplyError extends Error {
  override name = 'ReplyError';
}

/** Per store: the open batch of each program (and, on a Cluster, of each hash slot). */
export class Batcher {
  private readonly batches: TurnBatches<Program, Pending>;
  private readonly scripts = new WeakMap<Program, Script>();

  /** `slotOf`: on a Cluster, the hash slot of a check's keys (a batch holds checks of one slot only). */
  constructor(
    private readonly client: ClientAdapter,
    private readonly slotOf?: (key: string) => number,
    runtime: Runtime = realRuntime,
  ) {
    this.batches = new TurnBatches(runtime, (program, batch) => this.send(program, batch));
  }

  /**
   * Queues a check of `program` (on a Cluster, its keys all of one slot); its promise settles with the
   * check's own reply. `flush` is set to the write the check will leave in (its `at` once it has left).
   */
  add(program: Program, keys: string[], argv: (string | number)[], deadlineAt: number): { reply: Promise<Reply>; flush: Flush } {
    let item!: Pending;
    const reply = new Promise<Reply>((resolve, reject) => {
      item = { keys, argv, resolve, reject };
    });
    const flush = this.batches.add(program, this.slotOf === undefined ? -1 : this.slotOf(keys[0]!), item, deadlineAt);
    return { reply, flush };
  }

  /** This turn's batches leave whole: at the end of the turn, or at WHOLE_MAX checks (stores/turn-batches.ts). */
  keepWhole(): void {
    this.batches.keepWhole();
  }

  private send(program: Program, { items, deadlineAt }: OutgoingBatch<Pending>): Promise<unknown> {
    if (items.length === 1) {
      const only = items[0]!;
      return this.client
        .evalScript(scriptOf(program.algorithm.tag, program.lua), only.keys, only.argv, deadlineAt)
        .then((r) => only.resolve(r as Reply), only.reject);
    }
    const keys: string[] = [];
    const first = items[0]!.argv;
    // Shared by every check of the program (one planner made them all): penalty and padding.
    const argv: (string | number)[] = [items.length, first[2]!, first[4]!];
    for (const item of items) {
      for (const k of item.keys) keys.push(k);
      const a = item.argv;
      let spec = `${item.keys.length},${a[0]},${a[1]},${a[3]}`;
      for (let j = MASKS_AT; j < a.length; j++) spec += `,${a[j]}`;
      argv.push(spec);
    }
    const perId = keysPerId(program);
    return this.client.evalScript(this.scriptOf(program), keys, argv, deadlineAt).then(
      (replies) => {
        const all = Array.isArray(replies) ? (replies as unknown[]) : [];
        let at = 1;
        items.forEach((item, i) => {
          const head = all[at];
          const r = typeof head === 'number' && head >= 0 ? rebuild(all, at, item.keys.length / perId) : undefined;
          if (r !== undefined) {
            item.resolve(r.reply);
            at = r.next;
          } else {
            const e = head === -1 ? all[at + 1] : undefined;
            item.reject(new BatchedReplyError(typeof e === 'string' ? e : `ERR floodgate: no reply for check ${i + 1} of a batch`));
            // After a malformed reply nothing else can be read from it.
            at = head === -1 ? at + 2 : all.length + 1;
          }
        });
      },
      (err: unknown) => {
        for (const item of items) item.reject(err);
      },
    );
  }

  private scriptOf(program: Program): Script {
    let s = this.scripts.get(program);
    if (s === undefined) {
      s = scriptOf(`${program.algorithm.tag}_batch`, batchLua(program));
      this.scripts.set(program, s);
    }
    return s;
  }
}
