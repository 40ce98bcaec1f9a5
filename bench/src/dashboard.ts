import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serveHttp, startExample, startRedis } from '@floodgate/embedded-redis';
import { createApp } from '../../examples/express/src/app';

/*
 * `npm run dashboard:preview -w @floodgate/bench`: the panels of docs/grafana-dashboard.json, drawn from the
 * Express example's own /metrics while the demo's kind of traffic runs against it (five clients behind one
 * trusted proxy hop: a polite one, two that burst on /, one that hammers /search, one that guesses
 * passwords), scraped every 2 s for 60 s. It writes docs/dashboard.svg. Grafana itself is not available on
 * the machines this project is built on, so this is the same queries' arithmetic on the same metric names
 * (rate over each scrape interval, quantiles from the histogram buckets), not a screenshot.
 */
const SECONDS = Number(process.env.DASHBOARD_SECONDS ?? 60);
const SCRAPE_MS = 2_000;

type Sample = Map<string, number>;

function parse(text: string): Sample {
  const out: Sample = new Map();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const space = line.lastIndexOf(' ');
    out.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return out;
}

/** Sum of the deltas between two scrapes of the series whose name matches and whose label `by` has each value. */
function deltaBy(a: Sample, b: Sample, metric: string, by: string, only?: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const [series, value] of b) {
    if (!series.startsWith(`${metric}{`) || (only !== undefined && !new RegExp(only).test(series))) continue;
    const label = new RegExp(`${by}="([^"]*)"`).exec(series)?.[1] ?? '';
    out.set(label, (out.get(label) ?? 0) + value - (a.get(series) ?? 0));
  }
  return out;
}

/** A quantile from the histogram's bucket deltas between two scrapes (as histogram_quantile does). */
function quantile(a: Sample, b: Sample, q: number): number | undefined {
  const buckets = new Map<number, number>();
  for (const [series, value] of b) {
    const m = /^floodgate_store_duration_seconds_bucket\{.*le="([^"]+)"/.exec(series);
    if (!m) continue;
    const le = m[1] === '+Inf' ? Infinity : Number(m[1]);
    buckets.set(le, (buckets.get(le) ?? 0) + value - (a.get(series) ?? 0));
  }
  const sorted = [...buckets].sort((x, y) => x[0] - y[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (total === 0) return undefined;
  let prevLe = 0;
  let prevCount = 0;
  for (const [le, count] of sorted) {
    if (count >= q * total) {
      if (le === Infinity) return prevLe;
      return prevLe + ((le - prevLe) * (q * total - prevCount)) / Math.max(count - prevCount, 1);
    }
    prevLe = le;
    prevCount = count;
  }
  return prevLe;
}

interface Series {
  name: string;
  color: string;
  values: (number | undefined)[];
}

const COLORS: Record<string, string> = {
  allowed: '#3fa34d',
  denied: '#e0a030',
  lockout: '#c0392b',
  blocked: '#8e44ad',
  redis: '#2c7fb8',
  cache: '#7fcdbb',
  memory: '#999',
  fallback: '#c0392b',
  p50: '#2c7fb8',
  p99: '#e34a33',
};

function panel(x: number, y: number, w: number, h: number, title: string, unit: string, series: Series[], times: number[]): string {
  const max = Math.max(1e-9, ...series.flatMap((s) => s.values.filter((v): v is number => v !== undefined)));
  const px = (i: number) => x + 40 + (i / Math.max(times.length - 1, 1)) * (w - 60);
  const py = (v: number) => y + h - 30 - (v / max) * (h - 70);
  const lines = series.map((s) => {
    const pts = s.values.map((v, i) => (v === undefined ? undefined : `${px(i).toFixed(1)},${py(v).toFixed(1)}`)).filter(Boolean);
    return `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.join(' ')}"/>`;
  });
  const legend = series.map(
    (s, k) =>
      `<rect x="${x + 40 + k * 110}" y="${y + h - 16}" width="10" height="10" fill="${s.color}"/><text x="${x + 54 + k * 110}" y="${y + h - 7}" font-size="11">${s.name}</text>`,
  );
  const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  return [
    `<rect x="${x}" y="${y}" width="${w}" height="${h}" rx="4" fill="#fff" stroke="#ddd"/>`,
    `<text x="${x + 10}" y="${y + 20}" font-size="13" font-weight="bold">${title}</text>`,
    `<text x="${x + 36}" y="${y + 42}" font-size="10" fill="#666" text-anchor="end">${fmt(max)} ${unit}</text>`,
    `<line x1="${x + 40}" x2="${x + w - 20}" y1="${py(0)}" y2="${py(0)}" stroke="#ccc"/>`,
    `<line x1="${x + 40}" x2="${x + w - 20}" y1="${py(max)}" y2="${py(max)}" stroke="#eee"/>`,
    `<text x="${x + w - 20}" y="${py(0) + 14}" font-size="10" fill="#666" text-anchor="end">${times.length * (SCRAPE_MS / 1000)} s</text>`,
    ...lines,
    ...legend,
  ].join('\n');
}

async function main(): Promise<void> {
  // The Express example behind one trusted proxy hop, on REDIS_URL or a redis-server of its own.
  const embedded = process.env.REDIS_URL ? undefined : await startRedis();
  const running = await startExample(async (store, port) => serveHttp(createApp({ ...store, trustProxy: 1 }).listen(port)), {
    redisUrl: process.env.REDIS_URL ?? embedded!.url,
    prefix: `dashboard-${process.pid}`,
  });
  const clients = ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4', '198.51.100.5'];
  const get = (path: string, ip: string, init: RequestInit = {}) =>
    fetch(`${running.url}${path}`, { ...init, headers: { 'x-forwarded-for': ip, ...(init.headers ?? {}) } })
      .then((r) => r.arrayBuffer())
      .catch(() => undefined);
  let stop = false;
  const loop = async (everyMs: number, act: () => Promise<unknown>) => {
    while (!stop) {
      await act();
      await new Promise((r) => setTimeout(r, everyMs));
    }
  };
  const login = (user: string) =>
    get('/login', clients[4]!, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: user }),
    });
  const traffic = [
    loop(1_000, () => get('/', clients[0]!)),
    loop(150, () => get('/', clients[1]!)),
    loop(60, () => get('/', clients[2]!)),
    loop(250, () => get('/search?q=x', clients[3]!)),
    loop(400, () => login(['ada', 'grace', 'alan'][Math.floor(Math.random() * 3)]!)),
  ];
  const scrapes: Sample[] = [];
  for (let t = 0; t <= SECONDS * 1000; t += SCRAPE_MS) {
    scrapes.push(parse(await (await fetch(`${running.url}/metrics`)).text()));
    await new Promise((r) => setTimeout(r, SCRAPE_MS));
  }
  stop = true;
  await Promise.all(traffic);
  await running.close();
  await embedded?.stop();

  const times = scrapes.slice(1).map((_, i) => i);
  const per = (metric: string, by: string, names: string[], only?: string): Series[] =>
    names.map((name) => ({
      name,
      color: COLORS[name] ?? '#555',
      values: times.map((i) => (deltaBy(scrapes[i]!, scrapes[i + 1]!, metric, by, only).get(name) ?? 0) / (SCRAPE_MS / 1000)),
    }));
  const outcomes = per('floodgate_decisions_total', 'outcome', ['allowed', 'denied', 'lockout']);
  const sources = per('floodgate_decisions_total', 'source', ['redis', 'cache']);
  const latency: Series[] = (['p50', 'p99'] as const).map((name) => ({
    name,
    color: COLORS[name]!,
    values: times.map((i) => {
      const v = quantile(scrapes[i]!, scrapes[i + 1]!, name === 'p50' ? 0.5 : 0.99);
      return v === undefined ? undefined : v * 1000;
    }),
  }));
  const W = 1000;
  const svg = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="560" font-family="sans-serif" viewBox="0 0 ${W} 560">`,
    `<rect width="${W}" height="560" fill="#f4f5f7"/>`,
    `<text x="16" y="26" font-size="16" font-weight="bold">Floodgate: the example API under the demo's traffic (docs/grafana-dashboard.json's panels)</text>`,
    `<text x="16" y="44" font-size="11" fill="#555">Drawn by bench/src/dashboard.ts from the example's /metrics, scraped every ${SCRAPE_MS / 1000} s for ${SECONDS} s; the same queries as the Grafana dashboard, not a Grafana screenshot.</text>`,
    panel(16, 56, 480, 240, 'Decisions per second, by outcome', '/s', outcomes, times),
    panel(504, 56, 480, 240, 'Decisions per second, by source', '/s', sources, times),
    panel(16, 304, 480, 240, 'Store round trip (p50, p99)', 'ms', latency, times),
    panel(
      504,
      304,
      480,
      240,
      'Denials per second, by limiter',
      '/s',
      per('floodgate_decisions_total', 'limiter', ['api', 'search', 'login'], 'outcome="(?!allowed")').map((s, k) => ({
        ...s,
        color: ['#2c7fb8', '#e0a030', '#c0392b'][k]!,
      })),
      times,
    ),
    '</svg>',
  ].join('\n');
  const out = join(__dirname, '..', '..', 'docs', 'dashboard.svg');
  writeFileSync(out, `${svg}\n`);
  process.stdout.write(`wrote ${out}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
