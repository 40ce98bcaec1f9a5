/*
 * A hand-written SVG: one lane per algorithm, offered requests as grey bars, admitted ones in colour,
 * per time bin. No chart library: the picture is small and must not change when a library does.
 */
export interface Lane {
  label: string;
  admitted: number[];
}

const WIDTH = 900;
const LANE_H = 120;
const LEFT = 130;
const TOP = 40;
const COLOURS = ['#d1495b', '#00798c', '#edae49', '#30638e'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function renderChart(title: string, offered: number[], lanes: Lane[], binMs: number, marks: number[]): string {
  const bins = offered.length;
  const plotW = WIDTH - LEFT - 20;
  const barW = plotW / bins;
  const peak = Math.max(1, ...offered);
  const height = TOP + lanes.length * LANE_H + 40;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${LEFT}" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`,
  ];
  lanes.forEach((lane, k) => {
    const base = TOP + (k + 1) * LANE_H - 15;
    const scale = (LANE_H - 30) / peak;
    out.push(`<text x="10" y="${base - 40}" font-weight="bold">${esc(lane.label)}</text>`);
    out.push(`<text x="10" y="${base - 24}" fill="#555">${lane.admitted.reduce((a, b) => a + b, 0)} admitted</text>`);
    for (let i = 0; i < bins; i++) {
      const x = (LEFT + i * barW).toFixed(1);
      const o = offered[i]!;
      const a = lane.admitted[i]!;
      if (o > 0)
        out.push(
          `<rect x="${x}" y="${(base - o * scale).toFixed(1)}" width="${(barW - 1).toFixed(1)}" height="${(o * scale).toFixed(1)}" fill="#ddd"/>`,
        );
      if (a > 0)
        out.push(
          `<rect x="${x}" y="${(base - a * scale).toFixed(1)}" width="${(barW - 1).toFixed(1)}" height="${(a * scale).toFixed(1)}" fill="${COLOURS[k % COLOURS.length]}"/>`,
        );
    }
    out.push(`<line x1="${LEFT}" y1="${base}" x2="${LEFT + plotW}" y2="${base}" stroke="#333"/>`);
  });
  const axisY = TOP + lanes.length * LANE_H;
  for (const m of marks) {
    const x = (LEFT + (m / binMs) * barW).toFixed(1);
    out.push(`<line x1="${x}" y1="${TOP}" x2="${x}" y2="${axisY}" stroke="#999" stroke-dasharray="3,3"/>`);
    out.push(`<text x="${x}" y="${axisY + 16}" text-anchor="middle" fill="#333">${m / 1000}s</text>`);
  }
  out.push(
    `<text x="${LEFT}" y="${axisY + 34}" fill="#555">grey: offered, colour: admitted, per ${binMs} ms; dashed lines: aligned 2 s window boundaries</text>`,
  );
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
