import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster } from 'ioredis';
import { spawnRedis, type RedisProcess } from './processes';
import { redisServerBinary } from './redis-server';
import { ask } from './sentinel';

export interface ClusterSetup {
  nodes: RedisProcess[];
  /** For ioredis: `new Cluster(startupNodes)`. */
  startupNodes: { host: string; port: number }[];
  stop(): Promise<void>;
}

/** The CLI beside the server binary (valkey-cli beside valkey-server), else redis-cli from PATH. */
export function serverCli(): string {
  const server = redisServerBinary();
  const cli = join(dirname(server), basename(server).replace(/server/, 'cli'));
  return cli !== server && existsSync(cli) ? cli : 'redis-cli';
}

/**
 * A real Redis Cluster of 3 masters and 3 replicas from the server binary (redisServerBinary(): FLOODGATE_REDIS_SERVER
 * or redis-server), on free loopback ports, created with its CLI's `--cluster create`; resolves once every
 * node reports cluster_state:ok.
 */
export async function startCluster(): Promise<ClusterSetup> {
  const nodes = await Promise.all(
    Array.from({ length: 6 }, () => spawnRedis(['--cluster-enabled', 'yes', '--cluster-node-timeout', '2000'])),
  );
  const addrs = nodes.map((n) => `${n.host}:${n.port}`);
  try {
    let said: string;
    try {
      said = (await promisify(execFile)(serverCli(), ['--cluster', 'create', ...addrs, '--cluster-replicas', '1', '--cluster-yes'])).stdout;
    } catch (err) {
      // On a busy machine the CLI's own check, right after it has assigned the slots and the replicas, can
      // run before the nodes have told each other (a loaded run failed here with exit 1), on a cluster that
      // settles a moment later: what the tests need is waited for below, and its error says what the CLI said.
      const { stdout, stderr } = err as { stdout?: string; stderr?: string };
      said = `${stdout ?? ''}${stderr ?? ''}` || String(err);
    }
    const end = Date.now() + 30_000;
    for (;;) {
      const states = await Promise.all(nodes.map((n) => ask(n.port, (c) => c.cluster('INFO')).catch(() => '')));
      const view = String(await ask(nodes[0]!.port, (c) => c.cluster('NODES')).catch(() => ''));
      const replicas = view.split('\n').filter((line) => /\b(slave|replica)\b/.test(line)).length;
      if (states.every((s) => String(s).includes('cluster_state:ok') && String(s).includes('cluster_known_nodes:6')) && replicas === 3)
        break;
      if (Date.now() > end) throw new Error(`cluster did not settle (cluster_state:ok, 6 nodes, 3 replicas); redis-cli said:\n${said}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } catch (err) {
    // Nodes of a Cluster that never formed would outlive the test file (a loaded run left five behind).
    await Promise.all(nodes.map((n) => n.stop()));
    throw err;
  }
  return {
    nodes,
    startupNodes: nodes.map((n) => ({ host: n.host, port: n.port })),
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}

/**
 * A Cluster of startCluster() and a ready ioredis client of it (no re-sending of unanswered commands, as
 * the README's production settings, errors swallowed), for a describe block: started before its tests and
 * stopped after them.
 */
export function useCluster(): { readonly client: Cluster } {
  let setup: ClusterSetup | undefined;
  let client: Cluster | undefined;
  beforeAll(async () => {
    setup = await startCluster();
    const c = new Cluster(setup.startupNodes, { clusterRetryStrategy: () => 50, redisOptions: { autoResendUnfulfilledCommands: false } });
    c.on('error', () => undefined);
    await new Promise((r) => c.once('ready', r));
    client = c;
  }, 60_000);
  afterAll(async () => {
    client?.disconnect();
    await setup?.stop();
  });
  return {
    get client(): Cluster {
      if (client === undefined) throw new Error('useCluster(): the Cluster is started in beforeAll');
      return client;
    },
  };
}
