/*
 * docs/benchmarks.svg: throughput as a ratio to each framework's own no-limiter baseline, one panel per
 * shape, one group per framework, Floodgate's bar first and in colour beside each peer. Hand-written
 * SVG, like chart.ts: no chart library to drift.
 */
export interface RatioBar {
  shape: string;
  framework: string;
  variant: string;
  ratio: number;
}

const PANEL_W = 330;
const PANEL_H = 260;
const TOP = 60;
const BASE_Y = TOP + PANEL_H - 40;
const PLOT_H = PANEL_H - 80;
const MAX_RATIO = 1.2;
const PEER_COLOURS = ['#8d99ae', '#adb5bd', '#6c757d'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function renderRatioChart(title: string, subtitle: string, bars: readonly RatioBar[]): string {
  const shapes = [...new Set(bars.map((b) => b.shape))];
  const width = 40 + shapes.length * PANEL_W;
  const height = TOP + PANEL_H + 50;
  const y = (r: number): number => BASE_Y - (Math.min(r, MAX_RATIO) / MAX_RATIO) * PLOT_H;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    '<rect width="100%" height="100%" fill="#fff"/>',
    `<text x="20" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`,
    `<text x="20" y="40" fill="#555">${esc(subtitle)}</text>`,
  ];
  shapes.forEach((shape, p) => {
    const x0 = 40 + p * PANEL_W;
    out.push(`<text x="${x0}" y="${TOP}" font-size="13" font-weight="bold">${esc(shape)}</text>`);
    for (const r of [0.5, 1]) {
      out.push(
        `<line x1="${x0}" y1="${y(r)}" x2="${x0 + PANEL_W - 30}" y2="${y(r)}" stroke="${r === 1 ? '#333' : '#ddd'}" stroke-dasharray="${r === 1 ? '4,3' : '2,2'}"/>`,
      );
      out.push(`<text x="${x0 - 4}" y="${y(r) + 4}" text-anchor="end" fill="#555">${r === 1 ? '1.0' : r}</text>`);
    }
    const frameworks = [...new Set(bars.filter((b) => b.shape === shape).map((b) => b.framework))];
    const groupW = (PANEL_W - 40) / Math.max(1, frameworks.length);
    frameworks.forEach((fw, g) => {
      const group = bars
        .filter((b) => b.shape === shape && b.framework === fw)
        .sort((a, b) => Number(b.variant.startsWith('floodgate')) - Number(a.variant.startsWith('floodgate')));
      const barW = Math.min(26, (groupW - 12) / group.length);
      const gx = x0 + g * groupW + 6;
      let peer = 0;
      group.forEach((b, k) => {
        const fg = b.variant.startsWith('floodgate');
        const colour = fg ? '#d1495b' : PEER_COLOURS[peer++ % PEER_COLOURS.length];
        const bx = gx + k * barW;
        out.push(
          `<rect x="${bx.toFixed(1)}" y="${y(b.ratio).toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${(BASE_Y - y(b.ratio)).toFixed(1)}" fill="${colour}"><title>${esc(`${fw} ${b.variant}: ${b.ratio.toFixed(2)}x baseline`)}</title></rect>`,
        );
        out.push(
          `<text x="${(bx + barW / 2 - 1).toFixed(1)}" y="${(y(b.ratio) - 3).toFixed(1)}" text-anchor="middle" font-size="9">${b.ratio.toFixed(2)}</text>`,
        );
        out.push(
          `<text transform="translate(${(bx + barW / 2 + 2).toFixed(1)},${BASE_Y + 6}) rotate(50)" font-size="8" fill="#333">${esc(fg ? 'floodgate' : b.variant)}</text>`,
        );
      });
      out.push(
        `<text x="${(gx + (group.length * barW) / 2).toFixed(1)}" y="${TOP + 18}" text-anchor="middle" font-weight="bold" fill="#333">${esc(fw)}</text>`,
      );
    });
    out.push(`<line x1="${x0}" y1="${BASE_Y}" x2="${x0 + PANEL_W - 30}" y2="${BASE_Y}" stroke="#333"/>`);
  });
  out.push(
    `<text x="20" y="${height - 8}" fill="#555">red: Floodgate (1 x 1 in equal and hot, 3 rules x 2 identifiers in 3x2 and multi); grey: peers; dashed line: the framework with no limiter (1.0)</text>`,
  );
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
