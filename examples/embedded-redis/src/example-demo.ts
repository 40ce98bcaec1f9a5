import { request, type IncomingHttpHeaders } from 'node:http';

/** One scripted client: its own loopback address (Linux routes all of 127/8 to lo), a route and a burst size. */
interface Client {
  name: string;
  address: string;
  method: 'GET' | 'POST';
  path: string;
  body?: object;
  burst: number;
}

const clients: Client[] = [
  { name: 'alice (browsing)', address: '127.0.0.2', method: 'GET', path: '/', burst: 25 },
  { name: 'bob (searching)', address: '127.0.0.3', method: 'GET', path: '/search?q=redis', burst: 6 },
  { name: 'carol (polite)', address: '127.0.0.4', method: 'GET', path: '/', burst: 5 },
  { name: 'mallory -> ada (from .5)', address: '127.0.0.5', method: 'POST', path: '/login', body: { username: 'ada' }, burst: 4 },
  { name: 'mallory -> ada (from .6)', address: '127.0.0.6', method: 'POST', path: '/login', body: { username: 'ada' }, burst: 4 },
];

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
}

function send(base: URL, client: Client, localAddress: string | undefined): Promise<Reply> {
  const payload = client.body ? JSON.stringify(client.body) : undefined;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: base.port,
        method: client.method,
        path: client.path,
        localAddress,
        headers: payload ? { 'content-type': 'application/json' } : {},
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function fire(base: URL, client: Client): Promise<Reply[]> {
  const one = (): Promise<Reply> => send(base, client, client.address).catch(() => send(base, client, undefined));
  return Promise.all(Array.from({ length: client.burst }, one));
}

/**
 * `npm run demo`: fires the scripted burst at an example that scripts/example.mjs started (on a fresh key
 * prefix) at `url`, over HTTP, and prints a table of what each client saw. `label` names the example and its store.
 */
export async function runDemo(url: string, label: string): Promise<void> {
  const base = new URL(url);
  console.log(`Floodgate demo against ${label}\n`);
  const rows: Record<string, string | number>[] = [];
  for (const client of clients) {
    const replies = await fire(base, client);
    const limited = replies.filter((r) => r.status === 429);
    const last = replies.at(-1)!.headers;
    rows.push({
      client: client.name,
      request: `${client.method} ${client.path}`,
      sent: replies.length,
      admitted: replies.length - limited.length,
      limited: limited.length,
      'RateLimit (last)': String(last['ratelimit'] ?? '-'),
      'Retry-After': limited.length ? Math.max(...limited.map((r) => Number(r.headers['retry-after']))) : '-',
    });
  }
  console.table(rows);
  const policy = (await fire(base, { ...clients[2]!, burst: 1 }))[0]!.headers['ratelimit-policy'];
  console.log(`\nRateLimit-Policy on GET /: ${String(policy)}`);
}
