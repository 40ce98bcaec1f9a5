import type { Program } from '../algorithms/script';
import type { Reply } from '../reply';
import { afterTurn, realNow } from '../real-timers';
import { scriptOf, type ClientAdapter, type Script } from './client';
import type { Flush } from './coalesce';

/*
 * Batching (docs/design.md, "Batching"): the checks of one program that a server starts in one turn of the
 * event loop travel to one Redis in one script call instead of one call each. The batch script runs the
 * program's own script once per check, in arrival order, each with its own KEYS and ARGV, and answers every
 * check's reply: each check is decided on its own, atomically (a script runs alone), exactly as the same
 * checks sent one after another would be, but the EVALSHA dispatch, the client's per-command work, the
 * reply's framing and a promise per command are paid once per batch, on both sides of the wire.
 *
 * A batch leaves at the end of the turn (the check phase), or as soon as it holds BATCH_MAX checks, so Redis
 * starts on the first checks of a busy turn while this process is still parsing the rest (an idle Redis
 * while the server works, then an idle server while Redis works, is what a whole-turn batch would cost).
 * A batch of one is sent as the program's own script. An error in one check (a wrong-type key, say) is that
 * check's error alone: the others' replies stand. The deadline stays per check (stores/redis.ts); a batch
 * sent late because this process was busy is seen as such (its Flush says when it left).
 *
 * Only a standalone Redis batches: on a Cluster the checks of a turn rarely share a slot.
 */

/** The most checks one batch call carries: small enough that Redis starts early on a busy turn. */
export const BATCH_MAX = Number(process.env.FLOODGATE_BATCH_MAX ?? 16);

/**
 * The batch script of a program. ARGV[1] the number of checks N, then per check its key count and argument
 * count, then every check's ARGV in order; KEYS every check's KEYS in order. A check whose clock argument
 * (ARGV[4]) is '' (Redis TIME) gets the batch's one reading of TIME. Reply: per check its program's reply,
 * or the string 'ERR ...' when it raised or answered an error.
 */
export function batchLua(program: Program): string {
  return `local check = function(KEYS, ARGV)
${program.lua}
end
local N = tonumber(ARGV[1])
local out = {}
local ko, ao = 0, 1 + 2 * N
local now
for i = 1, N do
  local nk, na = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local k, a = {}, {}
  for j = 1, nk do k[j] = KEYS[ko + j] end
  for j = 1, na do a[j] = ARGV[ao + j] end
  ko, ao = ko + nk, ao + na
  if a[4] == '' then
    if now == nil then
      local t = redis.call('TIME')
      now = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
    end
    a[4] = now
  end
  local ok, r = pcall(check, k, a)
  if not ok then
    if type(r) == 'table' then r = r.err end
    out[i] = 'ERR ' .. tostring(r)
  elseif type(r) == 'table' and r.err then
    out[i] = 'ERR ' .. tostring(r.err)
  else
    out[i] = r
  end
end
return out
`;
}

interface Pending {
  keys: string[];
  argv: (string | number)[];
  resolve(reply: Reply): void;
  reject(err: unknown): void;
}

/** The checks of one program waiting for the end of the turn (or for the batch to fill). */
class Batch {
  readonly items: Pending[] = [];
  readonly flush: Flush = { at: undefined };
  deadlineAt = Infinity;
  sent = false;
}

/** A check's error inside a batch: the server's words, as the client would have raised them alone. */
export class BatchedReplyError extends Error {
  override name = 'ReplyError';
}

/** Per store: the open batch of each program. */
export class Batcher {
  private readonly open = new Map<Program, Batch>();
  private readonly scripts = new WeakMap<Program, Script>();

  constructor(private readonly client: ClientAdapter) {}

  /**
   * Queues a check of `program`; its promise settles with the check's own reply. `flush` is set to the write
   * the check will leave in (its `at` once it has left).
   */
  add(program: Program, keys: string[], argv: (string | number)[], deadlineAt: number): { reply: Promise<Reply>; flush: Flush } {
    let batch = this.open.get(program);
    if (batch === undefined) {
      const b = new Batch();
      batch = b;
      this.open.set(program, b);
      afterTurn(() => this.send(program, b));
    }
    if (deadlineAt < batch.deadlineAt) batch.deadlineAt = deadlineAt;
    const b = batch;
    const reply = new Promise<Reply>((resolve, reject) => b.items.push({ keys, argv, resolve, reject }));
    if (b.items.length >= BATCH_MAX) this.send(program, b);
    return { reply, flush: b.flush };
  }

  private send(program: Program, batch: Batch): void {
    if (batch.sent) return;
    batch.sent = true;
    if (this.open.get(program) === batch) this.open.delete(program);
    const { items } = batch;
    batch.flush.at = realNow();
    if (items.length === 1) {
      const only = items[0]!;
      this.client
        .evalScript(scriptOf(program.algorithm.tag, program.lua), only.keys, only.argv, batch.deadlineAt)
        .then((r) => only.resolve(r as Reply), only.reject);
      return;
    }
    const keys: string[] = [];
    const head: (string | number)[] = [items.length];
    const tail: (string | number)[] = [];
    for (const item of items) {
      head.push(item.keys.length, item.argv.length);
      for (const k of item.keys) keys.push(k);
      for (const a of item.argv) tail.push(a);
    }
    for (const a of tail) head.push(a);
    this.client.evalScript(this.scriptOf(program), keys, head, batch.deadlineAt).then(
      (replies) => {
        const all = Array.isArray(replies) ? (replies as unknown[]) : [];
        items.forEach((item, i) => {
          const r = all[i];
          if (Array.isArray(r)) item.resolve(r as Reply);
          else item.reject(new BatchedReplyError(typeof r === 'string' ? r : `ERR floodgate: no reply for check ${i + 1} of a batch`));
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
