import { shared } from '../kernel/state';
import type { Logger } from '../kernel/logger';

/*
 * Redis eviction (docs/security.md, "Eviction"): every Floodgate key has a TTL, so under `maxmemory` the
 * `volatile-*` policies evict Floodgate's keys first and `allkeys-*` may evict them too. An evicted counter
 * is a client's budget handed back; an evicted block key lifts a block. Floodgate cannot prevent that, so
 * it says so, once per client, the first time it uses one.
 */

const checked = shared('evictionChecked', () => new WeakSet<object>());

/** The maxmemory and maxmemory-policy of an INFO memory reply. */
export function parseMemoryInfo(info: string): { maxmemory: number; policy: string } | undefined {
  const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
  if (policy === undefined) return undefined;
  return { maxmemory: Number(/^maxmemory:(\d+)/m.exec(info)?.[1] ?? 0), policy };
}

/** Warns through `logger` when a server this client talks to may evict keys. Fire and forget; never throws. */
export function checkEvictionPolicy(client: { target: object; infoMemory(): Promise<string>[] }, logger: Logger): void {
  if (checked.has(client.target)) return;
  checked.add(client.target);
  let infos: Promise<string>[];
  try {
    infos = client.infoMemory();
  } catch {
    return;
  }
  for (const info of infos) {
    info.then(
      (text) => {
        const found = parseMemoryInfo(String(text));
        if (found === undefined || found.policy === 'noeviction') return;
        logger.warn(
          `floodgate: Redis maxmemory-policy is '${found.policy}'${found.maxmemory > 0 ? ` with maxmemory ${found.maxmemory}` : ''}: ` +
            "when memory runs out Redis may evict Floodgate's keys, which forgets counts and lifts blocks. " +
            "Use 'noeviction' (or a Redis of its own for rate limiting); see the README, Production",
        );
      },
      () => undefined, // INFO refused (an ACL without +info): nothing to check
    );
  }
}
