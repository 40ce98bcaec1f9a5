import { ConfigError, webClientAddress, type TrustProxyOption, type WarningName } from '@floodgate/core/adapter';
import { peerOf } from './peer';

/*
 * The client's address (docs/next.md, "Client address and proxies"): the connection's peer (peer.ts), and
 * X-Forwarded-For only as far as `trustProxy` reaches (core's webClientAddress reads the hops from the
 * right and gives the trust-proxy warnings). Next writes the peer into X-Forwarded-For itself when a
 * client sent none; that entry is the peer, not a hop, and is dropped before the hops are read.
 */

/** The options every function of this package takes besides core's. */
export interface ClientAddressOptions {
  /**
   * The proxies in front of the app whose X-Forwarded-For is believed: a number of hops (1: one load
   * balancer), or their addresses and CIDR ranges (`'10.0.0.0/8'`, `'loopback'`). Default: none, so the
   * client is the connection's peer and X-Forwarded-For never changes who is counted.
   */
  trustProxy?: TrustProxyOption;
}

export const CLIENT_ADDRESS_OPTION_KEYS = ['trustProxy'] as const;

type Warn = (name: WarningName, text: string) => void;

/** The forwarded header as a client or proxy sent it: without the entry Next added (the peer) when there was none. */
function sentForwarded(headers: Headers, peer: string | undefined): string | null {
  const forwarded = headers.get('x-forwarded-for');
  return forwarded !== null && peer !== undefined && forwarded.trim() === peer ? null : forwarded;
}

/** Validates `trustProxy`; given the limiter's warn, the headers -> client address function. */
export function clientAddress(options: ClientAddressOptions): (warn: Warn) => (headers: Headers) => string | undefined {
  const resolve = webClientAddress(options.trustProxy);
  return (warn) => {
    const addressOf = resolve(warn);
    let told = false;
    return (headers) => {
      const peer = peerOf(headers);
      if (peer === undefined && !told) {
        told = true;
        warn(
          'unknown-ip',
          "a request came in before Floodgate could read connections' addresses, so it was limited as ip:unknown; start the server with NODE_OPTIONS='--require @floodgate/next/register' (docs/next.md)",
        );
      }
      return addressOf(peer, sentForwarded(headers, peer));
    };
  };
}

/** Options that only a route handler can honour: a proxy never sees the response. */
export function refuseAfterResponse(options: object, where: string): void {
  for (const name of ['skipSuccessfulRequests', 'skipFailedRequests', 'requestWasSuccessful', 'settle'] as const) {
    if ((options as Record<string, unknown>)[name] !== undefined) {
      throw new ConfigError(name, `needs the response, which ${where} never sees; limit the route with withRateLimit() instead`);
    }
  }
}
