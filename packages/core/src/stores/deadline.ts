import { StoreError } from '../kernel/errors';

/** Connection faults as ioredis, node-redis and Valkey GLIDE word them. */
const CONNECTION_FAULT =
  /Connection is closed|ECONNREFUSED|ECONNRESET|EPIPE|Stream isn't writeable|MaxRetriesPerRequest|The client is closed|The client is offline|Socket closed unexpectedly|Connection timeout|Cluster is closed|the client is closed|Connection refused|broken pipe/i;

/**
 * Error replies that say the server cannot run Floodgate's scripts at all, whatever the check: a server
 * before effects replication without it ("Write commands not allowed after non deterministic commands"),
 * scripting renamed away or missing, an ACL that refuses EVALSHA or the keys, a Lua library or command
 * the scripts need that the server lacks.
 */
const UNSUPPORTED =
  /non deterministic commands|unknown command [`'"]?(evalsha|eval|script)\b|NOPERM|PermissionDenied|nonexistent global variable|Error compiling script|Unknown Redis command called from script|not allowed from script|scripting is disabled/i;

/**
 * A server's error reply without the arguments it quotes: Redis answers an unknown command with
 * "..., with args beginning with: '<sha>' '2' '<key>' ...", and the keys name the identifiers.
 */
export function withoutQuotedArguments(message: string): string {
  return message.replace(/,? with args beginning with:.*$/s, '');
}

/** The server's own words of an error reply: the message without a client's decoration or quoted arguments. */
function serverWords(message: string): string {
  return withoutQuotedArguments(message.replace(/^An error was signalled by the server: - /, '').replace(/^ReplyError: /, ''));
}

/**
 * The warning a limiter gives when the store fails it (once while failing). A server that cannot run the
 * scripts is said so, with its own words (in the error's message), never as a store it could not reach.
 */
export function storeFailureWarning(limiter: string, error: StoreError, policy: string): string {
  if (error.kind === 'unsupported') {
    return (
      `floodgate: ${limiter} cannot decide anything on its store: ${error.message.replace(/^floodgate: /, '')}. ` +
      'Floodgate needs Redis 5.0+, Valkey 7.2+ or another server that runs its Lua scripts (EVALSHA and EVAL ' +
      `allowed for its user): see docs/clients.md, "Servers". Until this is fixed every check takes failure policy '${policy}'`
    );
  }
  return `floodgate: ${limiter} could not get an answer from its store (${error.message}); failure policy '${policy}' applies`;
}

export function toStoreError(err: unknown): StoreError {
  if (err instanceof StoreError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const name = err instanceof Error ? err.constructor.name : '';
  if (name === 'ClosingError' || name === 'ConnectionError' || CONNECTION_FAULT.test(message)) {
    return new StoreError('unavailable', 'Redis connection failed', err);
  }
  // Valkey GLIDE's own request timeout (requestTimeout, default 250 ms): sent, and no reply in that time.
  if (name === 'TimeoutError') return new StoreError('timeout', "no reply from Redis within the client's requestTimeout", err);
  if (UNSUPPORTED.test(message)) {
    return new StoreError(
      'unsupported',
      `the Redis server cannot run Floodgate's scripts; it answered: ${JSON.stringify(serverWords(message).slice(0, 300))}`,
      err,
    );
  }
  return new StoreError('reply', 'Redis answered with an error', err);
}
