import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/**
 * What the limiter reads of a tool callback's `extra` (the SDK's `RequestHandlerExtra`): who is calling.
 * Declared by shape, so any 1.x version of the SDK fits.
 */
export interface ToolExtra {
  /** The validated access token's information, when the transport authenticated the request. */
  authInfo?: { clientId: string; extra?: Record<string, unknown> };
  /** The Streamable HTTP session the call arrived in. */
  sessionId?: string;
  /** The HTTP request's information (present on HTTP transports only). */
  requestInfo?: unknown;
}

export type { CallToolResult };
