import { ConfigError, createLimiter, type Cost, type Decision, type Limiter, type LimiterOptions } from '@floodgate/core';
import {
  assertKnownOptions,
  assertSettleable,
  checkCostFits,
  describeValue,
  LIMITER_OPTION_KEYS,
  logWarning,
  ownOptions,
  ownOrShared,
  reservations,
  resolveWarnings,
  rulesOfEveryPlan,
  safeLogger,
  type SettleFn,
  type WarningName,
} from '@floodgate/core/adapter';
import { denialResult } from './denial';
import { defaultIdentity } from './identity';
import type { McpRateLimit, McpRateLimitOptions, ToolLimitOptions } from './options';
import type { CallToolResult, ToolExtra } from './types';

/*
 * rateLimit() for the MCP SDK's McpServer (docs/mcp.md): a tool callback wrapped so that each call is one
 * check of core's limiter under the caller's identity (identity.ts) and, for rules `for: 'tool'`, the caller
 * on this tool; with `settle`, a reservation at the estimate settled at what the callback's result says it
 * cost, through the HTTP layer's reservations (a settle that throws or answers no cost keeps the estimate and
 * is a settle-failed event, as in every adapter). Everything Redis, the failure policy and the lists do is
 * the limiter's own.
 */

const OWN_KEYS = ['limiter', 'identify', 'warnings'];
/** The kinds of the identifiers a call is checked under: what a rule's `for` or a list entry may name. */
const KINDS = ['identity', 'tool'];

export function rateLimit(input: McpRateLimitOptions): McpRateLimit {
  if (typeof input !== 'object' || input === null) {
    throw new ConfigError('options', `must be an object with \`limits\` or \`limiter\`; got ${describeValue(input)}`);
  }
  const options = ownOptions(input) as McpRateLimitOptions & Record<string, unknown>;
  assertKnownOptions(options, [...OWN_KEYS, ...LIMITER_OPTION_KEYS]);
  const identify = options.identify;
  if (identify !== undefined && typeof identify !== 'function') {
    throw new ConfigError('identify', `must be a function of the callback's extra; got ${describeValue(identify)}`);
  }
  const warnings = resolveWarnings(options.warnings);
  const logger = safeLogger(options.logger);
  const warn = (name: WarningName, text: string): void => logWarning(logger, warnings, name, text);
  // An own limiter keeps receipts (refunds: true) unless told not to: a tool that settles reserves. The kinds
  // of a call's identifiers are declared, so allow and deny lists (and a lockout's scope) may name them.
  const own = options.limiter === undefined;
  const limiter = ownOrShared<Limiter>(
    options,
    LIMITER_OPTION_KEYS,
    (core) =>
      createLimiter({
        refunds: true,
        ...core,
        // Anything but an array is core's to refuse, naming the option.
        identifierKinds: Array.isArray(core.identifierKinds)
          ? [...new Set([...KINDS, ...(core.identifierKinds as string[])])]
          : (core.identifierKinds ?? KINDS),
      } as unknown as LimiterOptions),
    (value) => typeof (value as Partial<Limiter>).check === 'function',
    'createLimiter()',
  );
  const kinds = kindsChecked(limiter);

  const identityOf = (extra: ToolExtra): string => {
    if (identify === undefined) return defaultIdentity(extra);
    const who = identify(extra);
    if (typeof who === 'string' && who !== '') return who;
    warn('identify-empty', `identify() answered ${describeValue(who)} for a tool call: it was counted under its default identity`);
    return defaultIdentity(extra);
  };

  return {
    limiter,
    close: async () => {
      if (own) await limiter.close();
    },
    tool<P extends unknown[]>(
      name: string,
      handler: (...params: P) => CallToolResult | Promise<CallToolResult>,
      toolOptions: ToolLimitOptions<P> = {},
    ): (...params: P) => Promise<CallToolResult> {
      if (typeof name !== 'string' || name === '') throw new ConfigError('tool', `needs the tool's name; got ${describeValue(name)}`);
      if (typeof handler !== 'function') throw new ConfigError('tool', `needs the tool's callback; got ${describeValue(handler)}`);
      const { cost = 1, settle, plan, structuredContent = true } = resolveToolOptions(toolOptions, limiter);
      // Tool names are free text to a server; encoded, the ':' after them ends them, so no two (tool, identity) pairs collide.
      const toolKey = `tool:${encodeURIComponent(name)}:`;
      const reserved = settle === undefined ? undefined : reservations(limiter, settle as SettleFn, warn);
      const checkOptions = plan === undefined ? {} : { plan };

      return async (...params: P): Promise<CallToolResult> => {
        // The SDK calls (args, extra), or (extra) for a tool without input: extra is always last.
        const extra = (params[params.length - 1] ?? {}) as ToolExtra;
        const who = identityOf(extra);
        const ids: string[] = [];
        if (kinds.identity) ids.push(`identity:${who}`);
        if (kinds.tool) ids.push(`${toolKey}${who}`);
        const asked: Cost = typeof cost === 'function' ? await cost(...params) : cost;
        const decision: Decision =
          reserved === undefined
            ? await limiter.check(ids, { ...checkOptions, cost: asked })
            : await reserved.reserve(ids, asked, plan, undefined);
        if (!decision.allowed) return denialResult(name, decision, structuredContent);
        const result = await handler(...params);
        // What the callback answered settles its reservation (an error result too: settle says what it cost),
        // before the result is answered: the caller's next call, through any process, sees what this one cost.
        if (reserved !== undefined) await reserved.completed(decision, [result, ...params]);
        return result;
      };
    },
  };
}

/** Which of the two identifiers a call needs: those some rule applies to. A rule for any other kind would never apply. */
function kindsChecked(limiter: Limiter): { identity: boolean; tool: boolean } {
  const kinds = { identity: false, tool: false };
  for (const rule of rulesOfEveryPlan(limiter)) {
    if (rule.for === undefined || rule.for === 'identity') kinds.identity = true;
    else if (rule.for === 'tool') kinds.tool = true;
    else
      throw new ConfigError(
        'limits',
        `has a rule for '${rule.for}', which no tool call is checked under: a rule is per identity (no \`for\`, or 'identity') or per identity and tool ('tool')`,
      );
  }
  return kinds;
}

function resolveToolOptions<P extends unknown[]>(input: ToolLimitOptions<P>, limiter: Limiter): ToolLimitOptions<P> {
  if (typeof input !== 'object' || input === null) throw new ConfigError('tool', `options must be an object; got ${describeValue(input)}`);
  const options = ownOptions(input);
  assertKnownOptions(options, ['cost', 'settle', 'plan', 'structuredContent']);
  const { cost, settle, plan, structuredContent } = options;
  if (structuredContent !== undefined && typeof structuredContent !== 'boolean') {
    throw new ConfigError('structuredContent', `must be true or false; got ${describeValue(structuredContent)}`);
  }
  if (cost !== undefined && typeof cost !== 'function') checkCostFits(cost, limiter);
  if (settle !== undefined) {
    if (typeof settle !== 'function')
      throw new ConfigError('settle', `must be a function of the tool's result; got ${describeValue(settle)}`);
    assertSettleable(limiter, undefined);
  }
  if (plan !== undefined && !(typeof plan === 'string' && limiter.plans.includes(plan))) {
    throw new ConfigError(
      'plan',
      `must name one of the limiter's plans (${limiter.plans.join(', ') || 'it has none'}); got ${describeValue(plan)}`,
    );
  }
  return options;
}
