import { randomBytes } from 'node:crypto';
import type { Algorithm } from '../algorithms/types';
import { receiptsScript, type Program } from '../algorithms/compile';
import { masksAt, type Reply } from '../algorithms/frame';
import { RedisStore } from './redis';

/*
 * The store for an ioredis Cluster. A check's keys are grouped by hash slot (not by identifier: two
 * identifiers may share a slot) and each slot gets one script call, all in parallel, so no call ever spans
 * slots (no CROSSSLOT). All or nothing across slots (DESIGN.md invariant 2): when one slot denies or fails,
 * the slots that consumed are given back exactly what their receipts say, by an idempotent undo script,
 * and only while it still applies. So a split check never over-admits; for the moment between a slot's
 * consume and its undo, it may under-admit.
 */

/** CRC16/XMODEM, as Redis Cluster uses for key slots (cluster spec, "Keys distribution model"). */
function crc16(s: string): number {
  let crc = 0;
  for (const byte of Buffer.from(s)) {
    crc ^= byte << 8;
    for (let k = 0; k < 8; k++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The slot of a key: of its first non-empty {hash tag} when it has one, else of the whole key. */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  const tagged = close > open + 1 ? key.slice(open + 1, close) : key;
  return crc16(tagged) % 16384;
}

/*
 * KEYS: the state keys that consumed, then one marker key in their slot (makes a retried undo a no-op).
 * ARGV[1] cost; ARGV[1 + i] the receipt of KEYS[i]. Reply: 1 when it gave back, 0 when already done.
 */
const UNDO_MAIN = `
if not redis.call('SET', KEYS[#KEYS], '1', 'NX', 'PX', 3600000) then return 0 end
local cost = tonumber(ARGV[1])
for i = 1, #KEYS - 1 do fg_undo(KEYS[i], ARGV[i + 1], cost) end
return 1
`;

interface SlotCall {
  ids: number[];
  keys: string[];
  reply?: Reply;
}

export class ClusterStore extends RedisStore {
  override async run(program: Program, keys: string[], argv: (string | number)[]): Promise<Reply> {
    const nIds = keys.length / 2;
    const masks = masksAt(Number(argv[5]));
    const bySlot = new Map<number, SlotCall>();
    for (let i = 0; i < nIds; i++) {
      const slot = keySlot(keys[2 * i]!);
      const call = bySlot.get(slot) ?? { ids: [], keys: [] };
      call.ids.push(i);
      call.keys.push(keys[2 * i]!, keys[2 * i + 1]!);
      bySlot.set(slot, call);
    }
    // One slot: the single-Redis script, compiled for the rules; nothing to give back, so no receipts.
    if (bySlot.size === 1) return super.run(program, keys, argv);
    const { algorithm } = program;
    const calls = [...bySlot.values()];
    const head = argv.slice(0, masks);
    const settled = await Promise.allSettled(
      calls.map((c) => this.runSlot(algorithm, c.keys, [...head, ...c.ids.map((i) => argv[masks + i]!)])),
    );
    settled.forEach((s, k) => {
      if (s.status === 'fulfilled') calls[k]!.reply = s.value;
    });
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    const allowed = !failed && calls.every((c) => Number(c.reply![1]) === 1);
    const penalty = argv[2] === '1';
    if (!allowed && !penalty) await this.undoAll(algorithm, calls, Number(argv[1]));
    if (failed) throw failed.reason;
    return merge(calls, nIds, argv.slice(masks).map(String), allowed);
  }

  /**
   * The generic frame with undo receipts over keys of one slot: the reply, then per identifier its receipt
   * when the call consumed. Public for tests.
   */
  runSlot(algorithm: Algorithm, keys: string[], argv: (string | number)[]): Promise<Reply> {
    return this.send(`${algorithm.tag}_r`, receiptsScript(algorithm), keys, argv);
  }

  /** Gives back what consumed slots took; a failed undo only under-admits, so it is not the caller's error. */
  private async undoAll(algorithm: Algorithm, calls: SlotCall[], cost: number): Promise<void> {
    const id = randomBytes(8).toString('hex');
    await Promise.all(
      calls
        .filter((c) => c.reply !== undefined && Number(c.reply[2]) === 1)
        .map((c) => {
          const reply = c.reply!;
          const stateKeys = c.ids.map((_, k) => c.keys[2 * k]!);
          return this.giveBack(algorithm, stateKeys, reply.slice(reply.length - c.ids.length).map(String), cost, id).catch(() => 0);
        }),
    );
  }

  /**
   * Runs the undo script over keys of one slot. Idempotent per `undoId`: a second run with the same id
   * gives nothing back (reply 0). Public for tests and for callers that retry an undo.
   */
  giveBack(algorithm: Algorithm, stateKeys: string[], receipts: string[], cost: number, undoId: string): Promise<number> {
    const undo = this.command(`${algorithm.tag}_undo`, `${algorithm.undo.undo}\n${UNDO_MAIN}`);
    return undo(stateKeys.length + 1, ...stateKeys, `${stateKeys[0]}:u:${undoId}`, cost, ...receipts) as Promise<number>;
  }
}

/** One reply in the frame's layout (identifiers in the caller's order) from the per-slot replies. */
function merge(calls: SlotCall[], nIds: number, masks: string[], allowed: boolean): Reply {
  const rulesOf = (i: number): number => [...masks[i]!].filter((c) => c === '1').length;
  const blocks: Reply[] = [];
  const evals: Reply[] = [];
  let now = 0;
  for (const c of calls) {
    const r = c.reply!;
    now = Math.max(now, Number(r[0]));
    let p = 3 + 2 * c.ids.length;
    c.ids.forEach((i, k) => {
      blocks[i] = [r[3 + 2 * k]!, r[4 + 2 * k]!];
      evals[i] = r.slice(p, p + 3 * rulesOf(i));
      p += 3 * rulesOf(i);
    });
  }
  const out: Reply = [now, allowed ? 1 : 0, allowed ? 1 : 0];
  for (let i = 0; i < nIds; i++) out.push(...blocks[i]!);
  for (let i = 0; i < nIds; i++) out.push(...evals[i]!);
  return out;
}
