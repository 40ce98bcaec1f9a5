import type { Program } from '../scripts/compiler';
import { masksAt } from '../scripts/frame';
import type { Reply } from '../scripts/reply';
import { scriptOf, type ClientAdapter, type Script } from './clients';
import type { Flush } from './coalesce';
import { TurnBatches, type OutgoingBatch } from './turn-batches';

export { BATCH_MAX } from './turn-batches';

/*
 * Batching (docs/design.md, section 4, "Batches"): the checks of one program that a server starts in one turn of the
 * event loop travel to one Redis in one script call instead of one call each. The batch script runs the
 * program's own script once per check, in arrival order, each with its own KEYS and ARGV, and answers every
 * check's reply: each check is decided on its own, atomically (a script runs alone), exactly as the same
 * checks sent one after another would be, but the EVALSHA dispatch, the client's per-command work, the
 * reply's framing and a promise per command are paid once per batch, on both sides of the wire.
 *
 * A batch leaves at the end of the turn, or as soon as it holds BATCH_MAX checks (stores/turn-batches.ts).
 * A batch of one is sent as the program's own script. An error in one check (a wrong-type key, say) is that
 * check's error alone: the others' replies stand. The deadline stays per check (stores/redis.ts); a batch
 * sent late because this process was busy is seen as such (its Flush says when it left).
 *
 * On a Cluster, a batch holds the checks of one hash slot (a check whose keys span slots is split and
 * not batched: stores/cluster.ts): checks of one identifier, or of every identifier with `colocate`.
 */

/**
 * The batch script of a program. What every check of a program shares is sent once, what each check has of
 * its own as one argument (the client and Redis pay per argument, and a check has a dozen):
 *   ARGV[1] the number of checks N; ARGV[2] the number M of shared values, ARGV[3 .. 2 + M] those values:
 *   the frame's penalty (its ARGV[3]), TTL padding (ARGV[5]) and rule arguments (ARGV[6 ...]); then per
 *   check one argument "nk,op,cost,now,mask1,mask2,...": its key count and the rest of its frame ARGV
 *   (none of which can hold a comma). KEYS: every check's KEYS in order.
 * A check whose clock (now) is '' (Redis TIME) gets the batch's one reading of TIME. Reply: one flat array,
 * per check the number of items of its program's reply and those items, or -1 and the string 'ERR ...' when
 * it raised or answered an error. Flat, not an array per check: a client decodes a nested array item by item
 * at a cost per array, and the items themselves stay what Redis makes of the program's own reply.
 */
export function batchLua(program: Program): string {
  return `local check = function(KEYS, ARGV)
${program.lua}
end
local N, M = tonumber(ARGV[1]), tonumber(ARGV[2])
local find, sub = string.find, string.sub
local out, o, ko, now = {}, 0, 0, nil
for i = 1, N do
  local spec, f, n, pos = ARGV[2 + M + i], {}, 0, 1
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
      now = tostring(tonumber(r[1]) * 1000 + math.floor(tonumber(r[2]) / 1000))
    end
    t = now
  end
  local a = { f[2], f[3], ARGV[3], t, ARGV[4] }
  for j = 3, M do a[j + 3] = ARGV[2 + j] end
  for q = 5, n do a[M - 1 + q] = f[q] end
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
    local n = #r
    out[o + 1] = n
    for j = 1, n do out[o + 1 + j] = r[j] end
    o = o + 1 + n
  else
    out[o + 1] = -1
    out[o + 2] = 'ERR ' .. tostring(err)
    o = o + 2
  end
end
return out
`;
}

/** Where a frame's ARGV (scripts/frame.ts) has its masks: after the rule arguments. */
function masksStart(argv: readonly (string | number)[]): number {
  return masksAt(Number(argv[5]));
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
  private readonly batches = new TurnBatches<Program, Pending>((program, batch) => this.send(program, batch));
  private readonly scripts = new WeakMap<Program, Script>();

  /** `slotOf`: on a Cluster, the hash slot of a check's keys (a batch holds checks of one slot only). */
  constructor(
    private readonly client: ClientAdapter,
    private readonly slotOf?: (key: string) => number,
  ) {}

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

  private send(program: Program, { items, deadlineAt }: OutgoingBatch<Pending>): void {
    if (items.length === 1) {
      const only = items[0]!;
      this.client
        .evalScript(scriptOf(program.algorithm.tag, program.lua), only.keys, only.argv, deadlineAt)
        .then((r) => only.resolve(r as Reply), only.reject);
      return;
    }
    const keys: string[] = [];
    const first = items[0]!.argv;
    const masks = masksStart(first);
    // Shared by every check of the program (one planner made them all): penalty, padding, rule arguments.
    const argv: (string | number)[] = [items.length, masks - 3, first[2]!, first[4]!];
    for (let j = 5; j < masks; j++) argv.push(first[j]!);
    for (const item of items) {
      for (const k of item.keys) keys.push(k);
      const a = item.argv;
      let spec = `${item.keys.length},${a[0]},${a[1]},${a[3]}`;
      for (let j = masks; j < a.length; j++) spec += `,${a[j]}`;
      argv.push(spec);
    }
    this.client.evalScript(this.scriptOf(program), keys, argv, deadlineAt).then(
      (replies) => {
        const all = Array.isArray(replies) ? (replies as unknown[]) : [];
        let at = 0;
        items.forEach((item, i) => {
          const n = all[at];
          if (typeof n === 'number' && n >= 0 && at + 1 + n <= all.length) {
            item.resolve(all.slice(at + 1, at + 1 + n) as Reply);
            at += 1 + n;
          } else {
            const r = n === -1 ? all[at + 1] : undefined;
            item.reject(new BatchedReplyError(typeof r === 'string' ? r : `ERR floodgate: no reply for check ${i + 1} of a batch`));
            // After a malformed reply nothing else can be read from it.
            at = n === -1 ? at + 2 : all.length + 1;
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
