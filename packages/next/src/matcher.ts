import { pathToRegexp } from 'path-to-regexp';
import { ConfigError, describeValue } from '@floodgate/core/adapter';

/*
 * Per-path limits written as Next writes a proxy's `config.matcher`: '/api/:path*', '/login', with the
 * same path-to-regexp (version 6) Next compiles matchers with. A path matches when any entry does.
 */
export type Matcher = string | readonly string[];

/** The pathname -> matches function; undefined for no matcher (every path). */
export function compileMatcher(value: unknown): ((pathname: string) => boolean) | undefined {
  if (value === undefined) return undefined;
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length === 0) {
    throw new ConfigError('matcher', `must be a path like '/api/:path*' or a non-empty array of them; got ${describeValue(value)}`);
  }
  const patterns = list.map((entry: unknown, i) => {
    const option = typeof value === 'string' ? 'matcher' : `matcher[${i}]`;
    if (typeof entry !== 'string' || !entry.startsWith('/')) {
      throw new ConfigError(option, `must be a path starting with '/', as in a proxy's config.matcher; got ${describeValue(entry)}`);
    }
    try {
      return pathToRegexp(entry);
    } catch (error) {
      throw new ConfigError(option, `is not a path Next can match: ${(error as Error).message}`);
    }
  });
  return (pathname) => patterns.some((pattern) => pattern.test(pathname));
}
