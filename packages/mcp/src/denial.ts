import type { Decision } from '@floodgate/core';
import { retryAfterSeconds } from '@floodgate/core/adapter';
import type { CallToolResult } from './types';

/*
 * A denied call is a tool result with `isError: true` (docs/mcp.md, "What a denied call gets"), not a
 * JSON-RPC error: the MCP specification reports a tool's own failures in its result, where the model sees
 * them and can wait and retry, and keeps protocol errors for calls that could never work (an unknown tool,
 * bad arguments). The SDK's McpServer turns whatever a tool callback throws into such a result anyway, and
 * skips a tool's output schema for an error result. The retry time is in the text, for the model, and in
 * `structuredContent`, for a program.
 */

/** The machine-readable part of a denial, in `structuredContent`. */
export interface ToolDenial {
  /** `rate_limited`: the limits say wait; `forbidden`: the deny list; `unavailable`: the store could not decide. */
  error: 'rate_limited' | 'forbidden' | 'unavailable';
  /** The tool that was called. */
  tool: string;
  /** When to call again: 0 when waiting changes nothing (`forbidden`). */
  retryAfterMs: number;
  /** The binding limit and window, when the store decided. */
  limit?: number;
  windowMs?: number;
  /** What the binding rule counts, when not calls. */
  unit?: string;
}

/** Where a denial's details also stand in `_meta`, whatever `structuredContent` holds. */
export const DENIAL_META_KEY = 'io.floodgate/denial';

/**
 * The tool result of a denied call. `structured` false leaves `structuredContent` out, for a tool with an
 * output schema: the SDK's client checks an error result's structured content against it too.
 */
export function denialResult(tool: string, decision: Decision, structured: boolean): CallToolResult {
  const denial = denialOf(tool, decision);
  const result: CallToolResult = {
    isError: true,
    content: [{ type: 'text', text: textOf(denial) }],
    _meta: { [DENIAL_META_KEY]: { ...denial } },
  };
  if (structured) result.structuredContent = { ...denial };
  return result;
}

function denialOf(tool: string, decision: Decision): ToolDenial {
  if (decision.reason === 'listed') return { error: 'forbidden', tool, retryAfterMs: 0 };
  if (decision.reason === 'store-unavailable') return { error: 'unavailable', tool, retryAfterMs: decision.retryAfterMs };
  const denial: ToolDenial = { error: 'rate_limited', tool, retryAfterMs: decision.retryAfterMs };
  if (Number.isFinite(decision.limit)) {
    denial.limit = decision.limit;
    denial.windowMs = decision.windowMs;
    const unit = decision.states.find((s) => !s.allowed && s.retryAfterMs === decision.retryAfterMs)?.unit;
    if (unit !== undefined) denial.unit = unit;
  }
  return denial;
}

function textOf(denial: ToolDenial): string {
  const seconds = retryAfterSeconds(denial.retryAfterMs);
  switch (denial.error) {
    case 'forbidden':
      return `Calls to the tool "${denial.tool}" are not allowed for this client.`;
    case 'unavailable':
      return `Rate limiting is temporarily unavailable; retry "${denial.tool}" in ${seconds} s.`;
    default:
      return `Rate limit reached for the tool "${denial.tool}"${denial.unit ? ` (${denial.unit})` : ''}; retry in ${seconds} s.`;
  }
}
