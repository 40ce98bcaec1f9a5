/**
 * @floodgate/cli: `floodgate`, the command line for the person on call (docs/cli.md). `run(args)` is the
 * whole program: it parses `args`, talks to Redis and resolves to the exit code, writing to `io`.
 *
 * @module @floodgate/cli
 */
import { ArgumentError, ConfigError, type Decision, type RuleInput } from '@floodgate/core';
import { formatWindow, parseDuration } from '@floodgate/core/admin';
import { integer, parse, scan, type Parsed } from './args';
import { DEFAULTS } from './commands';
import { connect } from './connect';
import { CliError, EXIT, exitName, type ExitCode } from './errors';
import { Floodgate, redisCall, toCliError } from './floodgate';
import { human, isoTime, jsonText, printable, safe, table } from './format';
import { helpFor } from './help';
import { appliedText, override, overrideText, rowOf, untilText, type OverrideRow } from './override';
import { script } from './script';
import { maskUrl, secretMasker, urlsIn } from './secrets';
import { versionText } from './version';

export { EXIT, type ExitCode } from './errors';
export { USAGE } from './help';

/** Where the program writes, and the environment it reads (REDIS_URL). */
export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Record<string, string | undefined>;
}

const processIo: Io = {
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
};

/**
 * Runs the command line with `args` (without the node and script paths); resolves to the exit code.
 * Every line it writes, to either stream, has the passwords of the URLs it was given masked (secrets.ts).
 */
export async function run(args: string[], given: Io = processIo): Promise<ExitCode> {
  const mask = secretMasker(urlsIn(args, given.env));
  const io: Io = { stdout: (text) => given.stdout(mask(text)), stderr: (text) => given.stderr(mask(text)), env: given.env };
  const wanted = scan(args);
  // An error is one line: as text, whatever it quotes (an identifier, an option, a server's reply) is
  // escaped; under --json, one JSON document whose strings read back exactly.
  const fail = (error: CliError): ExitCode => {
    io.stderr(
      wanted.json
        ? jsonText({ error: { code: exitName(error.code), message: error.message, exit: error.code } }, 0)
        : `floodgate: ${printable(error.message)}`,
    );
    return error.code;
  };
  const help = helpFor(wanted);
  if (help instanceof CliError) return fail(help);
  if (help !== undefined || wanted.version) {
    io.stdout(help ?? versionText(wanted.json));
    return EXIT.ok;
  }
  let options: Parsed;
  try {
    options = parse(args, io.env);
  } catch (err) {
    return fail(err instanceof CliError ? err : new CliError(EXIT.usage, (err as Error).message));
  }
  // A command that never connects (commands.ts, `offline`).
  if (options.command === 'script') {
    try {
      return script(options, io);
    } catch (err) {
      if (err instanceof CliError) return fail(err);
      throw err;
    }
  }
  let closeConnection: (() => Promise<void>) | undefined;
  let floodgate: Floodgate | undefined;
  try {
    const conn = await connect(options.url, options.timeoutMs);
    closeConnection = conn.close;
    floodgate = await Floodgate.open(conn.client, options.prefix, options.timeoutMs, maskUrl(options.url));
    return await COMMAND_RUNNERS[options.command]!(floodgate, options, io);
  } catch (err) {
    return fail(
      err instanceof ConfigError || err instanceof ArgumentError
        ? new CliError(EXIT.usage, err.message.replace(/^floodgate: /, ''))
        : toCliError(err),
    );
  } finally {
    await floodgate?.close().catch(() => undefined);
    await closeConnection?.();
  }
}

type Runner = (fg: Floodgate, options: Parsed, io: Io) => Promise<ExitCode>;

function print(io: Io, options: Parsed, json: unknown, text: () => string): void {
  io.stdout(options.json ? jsonText(json) : text());
}

/** A peek's decision, or the error it stood for (a rebuilt limiter's peek answers failures by its policy). */
function checked(decision: Decision): Decision {
  if (decision.source === 'fallback' && decision.error) throw toCliError(decision.error);
  return decision;
}

function kindOf(identifier: string): string {
  const colon = identifier.indexOf(':');
  return colon === -1 ? '' : identifier.slice(0, colon);
}

const inspect: Runner = async (fg, options, io) => {
  const id = options.identifier;
  const now = await fg.now();
  const block = await fg.block(id, now);
  const limiters = [];
  for (const { name, description } of fg.registered) {
    const [state, lockoutRaw] = await redisCall(() =>
      Promise.all([fg.client.exists(fg.stateKeyOf(name, id)), fg.client.hgetall(fg.lockoutKeyOf(name, id))]),
    );
    const limiter = fg.limiter(name);
    // An override applied replaces every plan for this identifier: one peek, under it. One the application
    // ignores (a plan it no longer has) is shown with why, and the counts as its checks see them: its plans'.
    const found = description.overrides === true ? await limiter.overrides.get(id) : undefined;
    const override: OverrideRow | null = found === undefined ? null : rowOf(name, found);
    const applied = override !== null && override.ignored === null ? override : null;
    const rules = new Map<
      string,
      { plans: string[]; limit: number; windowMs: number; for: string | null; remaining: number; resetMs: number }
    >();
    const plans: [string, RuleInput[]][] = applied
      ? [[applied.plan ?? 'override', applied.plan !== null ? description.plans[applied.plan]! : applied.limits!]]
      : Object.entries(description.plans);
    for (const [plan, list] of plans) {
      const decision = checked(await limiter.peek(id, plan === '' || applied ? {} : { plan }));
      const applicable = list.filter((r) => r.for === undefined || r.for === kindOf(id));
      decision.states.forEach((s, k) => {
        const rule = applicable[k];
        const key = `${s.limit}/${s.windowMs}/${rule?.for ?? ''}`;
        const row = rules.get(key);
        if (row) row.plans.push(plan);
        else
          rules.set(key, {
            plans: [plan],
            limit: s.limit,
            windowMs: s.windowMs,
            for: rule?.for ?? null,
            remaining: s.remaining,
            resetMs: s.resetMs,
          });
      });
    }
    const lo = description.lockout;
    const u = Number(lockoutRaw.u ?? 0);
    const lockout =
      lo && u > now
        ? {
            denials: now - Number(lockoutRaw.s ?? 0) < lo.within ? Number(lockoutRaw.n ?? 0) : 0,
            after: lo.after,
            withinMs: lo.within,
            lockouts: Number(lockoutRaw.l ?? 0),
            rememberedUntil: isoTime(u),
          }
        : null;
    limiters.push({
      name,
      algorithm: description.algorithm,
      hasState: state === 1 || lockout !== null || override !== null,
      rules: [...rules.values()].map(({ plans, ...r }) => ({ ...r, plans: plans.filter((p) => p !== '') })),
      lockout,
      override: override && {
        plan: override.plan,
        limits: override.limits,
        expiresAt: override.expiresAt,
        expiresAtMs: override.expiresAtMs,
        ignored: override.ignored,
      },
    });
  }
  const holding = limiters.filter((l) => l.hasState);
  const json = {
    identifier: id,
    now: isoTime(now),
    block: block ? { reason: block.reason, endsAt: isoTime(block.endsAt), endsAtMs: block.endsAt, remainingMs: block.endsAt - now } : null,
    limiters: holding,
  };
  print(io, options, json, () => {
    const lines = [safe`${id} (Redis time ${isoTime(now)})`];
    lines.push(
      block
        ? safe`blocked: ${block.reason || '(no reason)'}, until ${isoTime(block.endsAt)} (in ${human(block.endsAt - now)})`
        : 'blocked: no',
    );
    if (holding.length === 0) {
      lines.push('', safe`no limiter under prefix '${fg.prefix}' holds state for ${id}`);
      return lines.join('\n');
    }
    const rows = holding.flatMap((l) =>
      l.rules.map((r) => [
        l.name,
        r.plans.join(',') || '-',
        `${r.limit} per ${formatWindow(r.windowMs)}${r.for ? ` (${r.for})` : ''}`,
        `${r.remaining}/${r.limit}`,
        human(r.resetMs),
      ]),
    );
    lines.push('', table(['LIMITER', 'PLAN', 'RULE', 'REMAINING', 'RESET'], rows));
    for (const l of holding) {
      if (l.override !== null) {
        lines.push('', safe`override in ${l.name}: ${overrideText(l.override)}, ${untilText(l.override)}; ${appliedText(l.override)}`);
      }
    }
    const locked = holding.filter((l) => l.lockout !== null);
    if (locked.length > 0) {
      const lockRows = locked.map((l) => {
        const o = l.lockout!;
        return [l.name, `${o.denials} of ${o.after} within ${formatWindow(o.withinMs)}`, String(o.lockouts), o.rememberedUntil];
      });
      lines.push('', table(['LIMITER', 'LOCKOUT DENIALS', 'LOCKOUTS', 'REMEMBERED UNTIL'], lockRows));
    }
    return lines.join('\n');
  });
  return holding.length > 0 || block ? EXIT.ok : EXIT.nothing;
};

const blockCommand: Runner = async (fg, options, io) => {
  const id = options.identifier;
  const durationMs = parseDuration(options.values.for, '--for');
  const reason = (options.values.reason as string | undefined) ?? '';
  await fg.limiter(fg.registered[0]!.name).block(id, { duration: durationMs, reason });
  const now = await fg.now();
  const block = await fg.block(id, now);
  if (block === undefined) throw new CliError(EXIT.redis, `the block of ${id} was written but is not in force`);
  const json = { identifier: id, reason: block.reason, endsAt: isoTime(block.endsAt), endsAtMs: block.endsAt, durationMs };
  print(
    io,
    options,
    json,
    () => safe`blocked ${id} until ${isoTime(block.endsAt)} (${human(durationMs)})` + (reason ? safe`, reason: ${reason}` : ''),
  );
  return EXIT.ok;
};

const unblock: Runner = async (fg, options, io) => {
  const id = options.identifier;
  const before = await fg.block(id, await fg.now());
  // A limiter with a lockout forgets its escalation for the identifier too; any limiter lifts the block.
  const withLockout = fg.registered.filter((l) => l.description.lockout !== null);
  for (const { name } of withLockout.length > 0 ? withLockout : [fg.registered[0]!]) await fg.limiter(name).unblock(id);
  const json = { identifier: id, wasBlocked: before !== undefined, reason: before?.reason ?? null };
  print(io, options, json, () =>
    before
      ? safe`unblocked ${id} (was blocked` + (before.reason ? safe`: ${before.reason}` : '') + safe`, until ${isoTime(before.endsAt)})`
      : safe`${id} was not blocked`,
  );
  return before ? EXIT.ok : EXIT.nothing;
};

const reset: Runner = async (fg, options, io) => {
  const id = options.identifier;
  const name = options.values.name as string | undefined;
  if (name !== undefined && !fg.registered.some((l) => l.name === name)) {
    throw new CliError(
      EXIT.nothing,
      `no limiter named '${name}' under prefix '${fg.prefix}' (known: ${fg.registered.map((l) => l.name).join(', ')})`,
    );
  }
  const names = name === undefined ? fg.registered.map((l) => l.name) : [name];
  const held: string[] = [];
  for (const n of names) {
    const keys = [fg.stateKeyOf(n, id), ...(fg.registered.find((l) => l.name === n)!.description.lockout ? [fg.lockoutKeyOf(n, id)] : [])];
    const counts = await redisCall(() => Promise.all(keys.map((k) => fg.client.exists(k))));
    if (counts.some((c) => c > 0)) held.push(n);
    await fg.limiter(n).reset(id);
  }
  const json = { identifier: id, limiters: names, reset: held };
  print(io, options, json, () =>
    held.length > 0 ? safe`reset ${id} in ${held.join(', ')}` : safe`${id} had no counts in ${names.join(', ')}: nothing to reset`,
  );
  return held.length > 0 ? EXIT.ok : EXIT.nothing;
};

const blocks: Runner = async (fg, options, io) => {
  const now = await fg.now();
  const list = await fg.blocks(now);
  const json = {
    now: isoTime(now),
    blocks: list.map((b) => ({
      identifier: b.identifier,
      reason: b.reason,
      endsAt: isoTime(b.endsAt),
      endsAtMs: b.endsAt,
      remainingMs: b.endsAt - now,
    })),
  };
  print(io, options, json, () =>
    list.length === 0
      ? safe`no identifier is blocked under prefix '${fg.prefix}'`
      : table(
          ['IDENTIFIER', 'REASON', 'ENDS', 'IN'],
          list.map((b) => [b.identifier, b.reason || '-', isoTime(b.endsAt), human(b.endsAt - now)]),
        ),
  );
  return list.length > 0 ? EXIT.ok : EXIT.nothing;
};

const top: Runner = async (fg, options, io) => {
  const minutes = integer(options.values.minutes as string | undefined, 'minutes', 1, 60, DEFAULTS.minutes);
  const limit = integer(options.values.limit as string | undefined, 'limit', 1, 1000, DEFAULTS.limit);
  const now = await fg.now();
  const list = (await fg.top(now, minutes)).slice(0, limit);
  const json = { minutes, top: list };
  print(io, options, json, () =>
    list.length === 0
      ? safe`no denials recorded under prefix '${fg.prefix}' in the last ${minutes} minute(s)`
      : table(
          ['#', 'IDENTIFIER', 'DENIALS'],
          list.map((t, i) => [String(i + 1), t.identifier, String(t.denials)]),
        ),
  );
  return list.length > 0 ? EXIT.ok : EXIT.nothing;
};

const limiters: Runner = async (fg, options, io) => {
  const json = { prefix: fg.prefix, limiters: fg.registered.map(({ name, description }) => ({ name, ...description })) };
  print(io, options, json, () =>
    table(
      ['LIMITER', 'ALGORITHM', 'RULES', 'LOCKOUT'],
      fg.registered.map(({ name, description: d }) => [
        name,
        d.algorithm,
        Object.entries(d.plans)
          .map(([plan, rules]) => {
            const list = rules.map((r) => `${r.limit}/${formatWindow(Number(r.window))}${r.for ? ` (${r.for})` : ''}`).join(', ');
            return plan === '' ? list : `${plan}: ${list}`;
          })
          .join('; '),
        d.lockout
          ? `after ${d.lockout.after} in ${formatWindow(d.lockout.within)}: ${formatWindow(d.lockout.duration)}${d.lockout.scope ? ` (${d.lockout.scope.join(', ')})` : ''}`
          : '-',
      ]),
    ),
  );
  return EXIT.ok;
};

const COMMAND_RUNNERS: Record<string, Runner> = { inspect, block: blockCommand, unblock, reset, blocks, top, limiters, override };
