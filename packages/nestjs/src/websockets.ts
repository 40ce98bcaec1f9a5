import type * as NestWebsockets from '@nestjs/websockets';

/*
 * What the installed @nestjs/websockets does, which Nest 12 changed (both since 12.0.1, its first release):
 *
 * - Its exception filter sends a WsException's object to the client as `{ event: 'exception', data }`, and
 *   any other exception as "Internal server error". Nest 12's sends to a `ws` client itself
 *   (`isNativeWebSocket`); Nest 11's emits on the socket object, which `ws` does not send, so there the
 *   guard sends the answer.
 * - Nest 12 runs global guards (APP_GUARD) for gateways' messages too; Nest 11 only @UseGuards().
 *
 * Loaded when a gateway first needs it: wherever a gateway runs, @nestjs/websockets is installed.
 */
export interface Websockets {
  WsException: (new (error: object) => Error) | undefined;
  /** Nest 12: the filter sends to a `ws` client itself, and APP_GUARD runs for gateways. */
  nest12: boolean;
}

let loading: Promise<Websockets> | undefined;

export function websockets(): Promise<Websockets> {
  loading ??= import('@nestjs/websockets').then(
    (ws: typeof NestWebsockets) => ({
      WsException: ws.WsException,
      nest12: typeof (ws.BaseWsExceptionFilter.prototype as unknown as { isNativeWebSocket?: unknown }).isNativeWebSocket === 'function',
    }),
    () => ({ WsException: undefined, nest12: false }),
  );
  return loading;
}
