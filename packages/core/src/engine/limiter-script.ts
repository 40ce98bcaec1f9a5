import { createProgram } from '../scripts/compiler';
import { ArgumentError } from '../kernel/errors';
import { resolveOptions, type LimiterOptions } from './options';
import { batchLua } from '../stores/batch';
import { scriptOf } from '../stores/clients';

/*
 * The Lua a limiter sends to Redis, for reading: made by the same calls a limiter and its store make
 * (resolveOptions, createProgram, batchLua, scriptOf), so the text, and its SHA1, are those of the
 * EVALSHA a limiter with these options sends. `floodgate script` prints it; the golden copies under
 * scripts/golden are it, per algorithm (packages/core/test/golden-scripts.test.ts).
 */

/**
 * Which of a limiter's scripts: `check`, the one a check runs (with `refunds: true`, the refundable one);
 * `batch`, the checks of one event-loop turn in one call on a standalone Redis (docs/design.md, section 4,
 * "Batches"); `split`, what each Redis Cluster slot runs for a check whose identifiers span slots;
 * `settle`, what a reservation's settle runs (docs/budgets.md).
 */
export type LimiterScriptKind = 'check' | 'batch' | 'split' | 'settle';

export interface LimiterScriptOptions {
  /** Which script; default 'check'. */
  script?: LimiterScriptKind;
  /** Which plan of `limits: { free: [...], pro: [...] }`; default the first. */
  plan?: string;
}

const KINDS: readonly LimiterScriptKind[] = ['check', 'batch', 'split', 'settle'];

/**
 * The script a limiter made with `options` sends to Redis, as sent (its first line is the prelude every
 * Floodgate script has), without touching Redis. Of the options, `algorithm`, `limits`, `refunds` and
 * `lockout` shape it; all are validated as createLimiter() validates them (a ConfigError naming the option).
 */
export function limiterScript(options: LimiterOptions, which: LimiterScriptOptions = {}): string {
  const opts = resolveOptions(options);
  const { script = 'check', plan: planName } = which;
  if (!KINDS.includes(script)) throw new ArgumentError(`script must be one of ${KINDS.join(', ')}; got ${JSON.stringify(script)}`);
  const plan = planName === undefined ? opts.plans[0]! : opts.plans.find((p) => p.name === planName && p.name !== '');
  if (plan === undefined) {
    const names = opts.plans.map((p) => p.name).filter(Boolean);
    throw new ArgumentError(
      `unknown plan ${JSON.stringify(planName)} (${names.length > 0 ? `known: ${names.join(', ')}` : 'limits names no plans'})`,
    );
  }
  const program = createProgram(opts.algorithm, plan.rules, opts.refunds, opts.lockout);
  const { tag } = program.algorithm;
  if (script === 'batch') return scriptOf(`${tag}_batch`, batchLua(program)).lua;
  if (script === 'split') return scriptOf(`${tag}_split`, program.split).lua;
  if (script === 'settle') return scriptOf(`${tag}_settle`, program.settle).lua;
  return scriptOf(tag, program.lua).lua;
}
