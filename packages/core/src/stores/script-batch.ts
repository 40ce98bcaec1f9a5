import { BatchedReplyError } from './batch';
import { scriptOf, type ClientAdapter } from './clients';
import type { Flush } from './coalesce';
import { TurnBatches, type OutgoingBatch } from './turn-batches';
import { realRuntime, type Runtime } from '../kernel/runtime';

/*
 * Batches of one script's calls (docs/design.md, section 4, "Batches"): the calls of a script that is not a
 * check (a reservation's settle) started in one turn of the event loop travel in one call of its batch
 * script, which runs the script once per call, in order, each with its own KEYS and ARGV. It is what
 * stores/batch.ts does for checks, without the check frame's packing: a call here keeps its arguments as
 * they are, so any script can be batched. Each call is its own atomic step, and its error is its own.
 *
 * Only for scripts whose reply nobody reads: a call's promise resolves with nothing once its part ran.
 * A batch leaves at the end of the turn or as soon as it holds BATCH_MAX calls (stores/turn-batches.ts); a
 * batch of one is the script itself. On a Cluster a batch holds the calls of one hash slot.
 */

/**
 * The batch script of `lua`: ARGV[1] the number of calls N; ARGV[2 .. 1 + N] each call's key count;
 * ARGV[2 + N .. 1 + 2N] each call's argument count; then every call's ARGV in order. KEYS: every call's
 * KEYS in order. Reply: per call 1, or the string 'ERR ...' when it raised or answered an error.
 */
export function scriptBatchLua(lua: string): string {
  return `local call = function(KEYS, ARGV)
${lua}
end
local N = tonumber(ARGV[1])
local out, ko, ao = {}, 0, 1 + 2 * N
for i = 1, N do
  local nk, na = tonumber(ARGV[1 + i]), tonumber(ARGV[1 + N + i])
  local k, a = {}, {}
  for j = 1, nk do k[j] = KEYS[ko + j] end
  for j = 1, na do a[j] = ARGV[ao + j] end
  ko, ao = ko + nk, ao + na
  local ok, r = pcall(call, k, a)
  if not ok then
    if type(r) == 'table' then r = r.err end
    out[i] = 'ERR ' .. tostring(r)
  elseif type(r) == 'table' and r.err then
    out[i] = 'ERR ' .. tostring(r.err)
  else
    out[i] = 1
  end
end
return out
`;
}

interface Pending {
  keys: string[];
  argv: (string | number)[];
  resolve(): void;
  reject(err: unknown): void;
}

/** A script by its text, and its kind (the name it is sent under). */
interface ScriptKind {
  kind: string;
  lua: string;
}

/** Per store: the open batch of each script (and, on a Cluster, of each hash slot). */
export class ScriptBatcher {
  /** By the script's text (one ScriptKind per text, so that its batches share a key). */
  private readonly kinds = new Map<string, ScriptKind>();
  private readonly batches: TurnBatches<ScriptKind, Pending>;
  /** Per script's text, its batch script's (built once). */
  private readonly batchTexts = new Map<string, string>();

  /** `slotOf`: on a Cluster, the hash slot of a call's keys (a batch holds calls of one slot only). */
  constructor(
    private readonly client: ClientAdapter,
    private readonly slotOf?: (key: string) => number,
    runtime: Runtime = realRuntime,
  ) {
    this.batches = new TurnBatches(runtime, (script, batch) => this.send(script, batch));
  }

  /**
   * Queues a call of the script `kind`/`lua` (on a Cluster, its keys all of one slot); its promise settles
   * once the call ran. `flush` is set to the write the call will leave in.
   */
  add(kind: string, lua: string, keys: string[], argv: (string | number)[], deadlineAt: number): { done: Promise<void>; flush: Flush } {
    let script = this.kinds.get(lua);
    if (script === undefined) {
      script = { kind, lua };
      this.kinds.set(lua, script);
    }
    let item!: Pending;
    const done = new Promise<void>((resolve, reject) => {
      item = { keys, argv, resolve, reject };
    });
    const flush = this.batches.add(script, this.slotOf === undefined ? -1 : this.slotOf(keys[0]!), item, deadlineAt);
    return { done, flush };
  }

  private send({ kind, lua }: ScriptKind, { items, deadlineAt }: OutgoingBatch<Pending>): Promise<unknown> {
    if (items.length === 1) {
      const only = items[0]!;
      return this.client.evalScript(scriptOf(kind, lua), only.keys, only.argv, deadlineAt).then(() => only.resolve(), only.reject);
    }
    const keys: string[] = [];
    const argv: (string | number)[] = [items.length];
    for (const item of items) argv.push(item.keys.length);
    for (const item of items) argv.push(item.argv.length);
    for (const item of items) {
      for (const k of item.keys) keys.push(k);
      for (const a of item.argv) argv.push(a);
    }
    let text = this.batchTexts.get(lua);
    if (text === undefined) {
      text = scriptBatchLua(lua);
      this.batchTexts.set(lua, text);
    }
    return this.client.evalScript(scriptOf(`${kind}_batch`, text), keys, argv, deadlineAt).then(
      (replies) => {
        const all = Array.isArray(replies) ? (replies as unknown[]) : [];
        items.forEach((item, i) => {
          const r = all[i];
          if (r === 1) item.resolve();
          else item.reject(new BatchedReplyError(typeof r === 'string' ? r : `ERR floodgate: no reply for call ${i + 1} of a batch`));
        });
      },
      (err: unknown) => {
        for (const item of items) item.reject(err);
      },
    );
  }
}
