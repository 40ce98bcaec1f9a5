import { unitsOf, type Rule } from '../../config/rules';
import type { LockoutSpec } from '../lockout';
import { LUA_SNAPSHOT, MASKS_AT, ruleParams, type RuleParams } from '../frame';
import type { Algorithm } from '../types';
import { BLOCKS, prologue, REPLY, singleFrame, splitFrame } from './frames';
import { settleScript } from './settle';
import { maskCode } from './mask';
import { header, plan, type ScriptKind } from './plan';
import { sharedFunctions, shapeOf } from './shape';

/** The script of `kind` for `rules`, with the lockout step when `lockout` is given. */
export function compileScript(algorithm: Algorithm, rules: readonly Rule[], kind: ScriptKind = 'single', lockout?: LockoutSpec): string {
  if (kind === 'settle') return settleScript(algorithm, rules);
  const split = kind === 'split';
  const t = algorithm.lua;
  const { ctx, masks } = plan(algorithm, rules, kind);
  const shape = shapeOf(masks);
  const code = new Map(masks.filter((m) => m.rules.length > 0).map((m) => [m, maskCode(t, ctx, shape, m, kind)]));
  const sections: string[] = [header(algorithm, rules, ctx, masks, kind, shape.shared), prologue(ctx.units)];
  // The check's incarnation, after its masks (docs/design.md, section 4), for a key that has none.
  if (ctx.incarnations) {
    sections.push(
      `-- the incarnation a key without one gets (incarnation.ts): ARGV after the masks\nlocal NONCE = ARGV[${MASKS_AT + 1} + #KEYS / ${lockout ? 4 : 2}]\nif NONCE and not string.find(NONCE, '^[1-9]%d*$') then NONCE = nil end`,
    );
  }
  if (split) sections.push(`-- key snapshots, for the Cluster give-back (frame.ts)\n${LUA_SNAPSHOT.trim()}`);
  const setup = ctx.fields.map((f) => t.setup?.(f, ctx).trim() ?? '').filter(Boolean);
  if (setup.length > 0) sections.push(`-- per field, what depends only on NOW\n${setup.join('\n')}`);
  sections.push(REPLY);
  if (shape.shared)
    sections.push('local F = {}', ...sharedFunctions(t, ctx, shape, kind !== 'single'), ...[...code.values()].map((c) => c.functions!));
  sections.push(
    `-- the frame: every identifier's block, then its rules at COST, then (all or nothing) the commit\n` +
      `local KEYS_PER_ID = ${lockout ? 4 : 2}\n${BLOCKS}\nlocal MASKS = ${MASKS_AT}`,
  );
  sections.push(split ? splitFrame(masks, code, lockout) : singleFrame(masks, code, kind === 'refundable', ctx.units.length, lockout));
  return `${sections.join('\n\n')}\n`;
}

/**
 * What a limiter runs: its algorithm (the memory store's twin), the single-Redis script, and the split
 * script a Cluster needs for checks whose identifiers span slots (made on first use).
 */
export interface Program {
  readonly algorithm: Algorithm;
  /** The single-Redis script: 'refundable' when the limiter was made with `refunds: true`, else 'single'. */
  readonly lua: string;
  /** Whether `lua` answers receipts (the reply's last values when it consumed). */
  readonly refundable: boolean;
  /** The split script (made on first use: only a Cluster with checks spanning slots needs it). */
  readonly split: string;
  /** The settle script of a reservation (settle.ts; made on first use: only reservations need it). */
  readonly settle: string;
  /** The rules, as the twin evaluates them (the script has them as constants: none is sent). */
  readonly params: RuleParams;
  /** The units the rules count, in the order of their first rule: one cost each in ARGV[2] (units.ts). */
  readonly units: readonly string[];
  /**
   * The `lockout` option, decided in both scripts: each identifier then has a third key, its lockout
   * state, after all the identifiers' state and block keys, and a fourth, the block index of its block
   * key's slot, which a lockout's block enters (KEYS: s1 b1 ... sN bN l1 ... lN x1 ... xN).
   */
  readonly lockout: LockoutSpec | undefined;
}

export function createProgram(algorithm: Algorithm, rules: readonly Rule[], refundable = false, lockout?: LockoutSpec): Program {
  let split: string | undefined;
  let settle: string | undefined;
  return {
    algorithm,
    lua: compileScript(algorithm, rules, refundable ? 'refundable' : 'single', lockout),
    refundable,
    lockout,
    params: ruleParams(rules, algorithm),
    units: unitsOf(rules),
    get split() {
      split ??= compileScript(algorithm, rules, 'split', lockout);
      return split;
    },
    get settle() {
      settle ??= compileScript(algorithm, rules, 'settle');
      return settle;
    },
  };
}
