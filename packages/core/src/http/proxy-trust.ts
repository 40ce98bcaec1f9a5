import { warned, type WarningName } from '../kernel/warnings';

/*
 * The two trust-proxy warnings every adapter gives (docs/security.md, "Behind a proxy"), decided here once.
 * A framework that says what it trusts (Express's `trust proxy`, Koa's `app.proxy`, a `trustProxy` list)
 * hands in what its setting makes of the request; one that does not (Fastify, whose `trustProxy` is not
 * readable) hands in the address it resolved and the socket's, and the setting's effect is read off them.
 */

/** How an adapter names its framework's setting in the warnings. */
export interface TrustSetting {
  /** The setting as users write it: "Express's 'trust proxy'", "Koa's app.proxy", "trustProxy". */
  readonly name: string;
  /** What to do instead: "set 'trust proxy' to the number of proxies or their addresses". */
  readonly fix: string;
}

/** What the framework's setting made of one request. */
export interface TrustReading {
  /** X-Forwarded-For as it arrived; undefined without one. */
  readonly forwarded: string | undefined;
  /** The setting believes every hop, so the leftmost entry (which any client writes) is the address. Default: read off `ip`. */
  readonly trustsAll?: boolean;
  /** The header came but was not believed (no proxy, or not this sender, is trusted). Default: read off `ip` and `peer`. */
  readonly ignored?: boolean;
  /** The address the framework resolved, when it does not say what it trusts. */
  readonly ip?: string;
  /** The connection's peer. */
  readonly peer?: string;
}

type Warn = (name: WarningName, text: string) => void;

/** Whether both warnings were shown in this process: a per-request check can stop before reading anything. */
export function trustWarned(): boolean {
  return warned('trust-proxy-all') && warned('forwarded-header-untrusted');
}

/**
 * Warns (once per process, through the limiter's `warn`) when the setting lets any client choose its
 * address, or ignores a forwarded header so that everyone behind a proxy shares one limit. `read` runs
 * only while a warning is still to give.
 */
export function checkProxyTrust(warn: Warn, setting: TrustSetting, read: () => TrustReading): void {
  if (trustWarned()) return;
  // Read off the object, not copied out of it: a rest pattern (`...said`) copied it at every request, about
  // 60 ns, three times the rest of this check when no header came.
  const said = read();
  const { forwarded, ip, peer } = said;
  const entries = forwarded === undefined ? [] : forwarded.split(',').map((entry) => entry.trim());
  const trustsAll = said.trustsAll ?? (entries.length > 1 && ip === entries[0]);
  if (trustsAll && !warned('trust-proxy-all')) {
    return warn(
      'trust-proxy-all',
      `${setting.name} trusts every proxy hop, so any client can choose its IP with X-Forwarded-For; ${setting.fix}`,
    );
  }
  if (forwarded === undefined || warned('forwarded-header-untrusted')) return;
  const ignored = said.ignored ?? (ip !== undefined && ip === peer && !entries.includes(ip));
  if (!ignored) return;
  const sender = peer === undefined ? 'a sender' : peer;
  warn(
    'forwarded-header-untrusted',
    `X-Forwarded-For arrived from ${sender}, which ${setting.name} does not trust: the header was ignored, so if that is your proxy every client behind it shares one limit; ${setting.fix}`,
  );
}
