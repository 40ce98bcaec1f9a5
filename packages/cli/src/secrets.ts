import { printable } from './format';

/*
 * A Redis password must never reach the terminal (a shared screen, a CI log, a pasted transcript), whatever
 * form the URL was typed in. Parsing cannot be trusted to find it: a typo (a letter in the port, one slash
 * after the scheme, an unencoded '@', '/', '#' or '?' in the password) makes a URL that `new URL` rejects or
 * reads differently, and then the whole string, password included, was quoted. So the password is found by
 * text: everything between the first ':' of the userinfo and the last '@', whatever it contains, and the
 * value of every query parameter whose name says it holds a credential. When in doubt it masks more.
 */

/** A scheme and its slashes (`redis://`, `redis:/`, `unix:///`), or the leading slashes of a path. */
const AUTHORITY_START = /^(?:[A-Za-z][A-Za-z0-9+.-]*:)?\/+/;
/** `?password=...`, `&auth_token=...`, `;pwd=...`: the value of a parameter named for a credential. */
const CREDENTIAL_PARAM = /([?&;][^=&#;?]*(?:pass|pwd|secret|token|auth|cred|key)[^=&#;?]*=)([^&#;]*)/gi;
/** A password shorter than this is masked in URLs, but not searched for in the rest of a message. */
const MIN_SEARCHED = 4;

/** Where the userinfo's password is in `url`: from after the userinfo's first ':' to its last '@'. */
function passwordSpan(url: string): { start: number; end: number } | undefined {
  const start = AUTHORITY_START.exec(url)?.[0].length ?? 0;
  const end = url.lastIndexOf('@');
  if (end <= start) return undefined;
  const colon = url.indexOf(':', start);
  return colon === -1 || colon >= end ? undefined : { start: colon + 1, end };
}

/** `url` with its password and credential parameters as `***`: `redis://user:***@host:6379/0?password=***`. */
export function maskUrl(url: string): string {
  const span = passwordSpan(url);
  const masked = span === undefined ? url : `${url.slice(0, span.start)}***${url.slice(span.end)}`;
  return masked.replace(CREDENTIAL_PARAM, '$1***');
}

function decoded(value: string): string[] {
  const out = [value];
  try {
    out.push(decodeURIComponent(value), decodeURIComponent(value.replace(/\+/g, ' ')));
  } catch {
    // Not percent-encoded: the value as it is.
  }
  return out;
}

/** The secrets `url` holds, in each form a message could quote them: as typed, decoded, encoded, escaped. */
export function urlSecrets(url: string): string[] {
  const raw: string[] = [];
  const span = passwordSpan(url);
  if (span !== undefined) raw.push(url.slice(span.start, span.end));
  for (const m of url.matchAll(CREDENTIAL_PARAM)) raw.push(m[2]!);
  try {
    raw.push(new URL(url).password);
  } catch {
    // Not a URL `new URL` reads: the textual forms above.
  }
  const forms = raw.flatMap(decoded).flatMap((s) => [s, encodeURIComponent(s), printable(s), JSON.stringify(s).slice(1, -1)]);
  return [...new Set(forms)].filter((s) => s !== '');
}

/**
 * A function every line of output goes through: each of `urls` is replaced by its masked form, then every
 * secret they hold (of at least MIN_SEARCHED characters) wherever it appears, as a client library may quote
 * a piece of a URL it misread (`connect ENOENT /user:<password>@host`).
 */
export function secretMasker(urls: readonly string[]): (text: string) => string {
  const replacements: [string, string][] = [];
  for (const url of urls) {
    if (maskUrl(url) !== url) replacements.push([url, maskUrl(url)]);
    for (const secret of urlSecrets(url)) if (secret.length >= MIN_SEARCHED) replacements.push([secret, '***']);
  }
  replacements.sort(([a], [b]) => b.length - a.length);
  return (text) => replacements.reduce((out, [from, to]) => out.split(from).join(to), text);
}

/** The URLs in a command line and its environment: --url's, $REDIS_URL, and any argument that looks like one. */
export function urlsIn(args: readonly string[], env: Record<string, string | undefined>): string[] {
  const urls = env.REDIS_URL ? [env.REDIS_URL] : [];
  args.forEach((arg, i) => {
    if (arg.startsWith('--url=')) urls.push(arg.slice('--url='.length));
    else if (args[i - 1] === '--url' || /^[A-Za-z][A-Za-z0-9+.-]*:\/|^rediss?:/i.test(arg)) urls.push(arg);
  });
  return urls;
}
