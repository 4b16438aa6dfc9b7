// Time-series chart on uPlot (loaded on first use, so the first page stays small): numeric series over a time
// range, with vertical markers for discrete events (touch, motion, contact, presence) and for the readings that
// triggered an alert (dashed, flagged). Colours come from CSS custom properties so the chart follows the light or
// dark theme.
import { useEffect, useRef, useState } from 'preact/hooks';

export interface ChartSeries {
  label: string;
  /** [unix seconds, value] pairs, ascending. */
  points: [number, number][];
  color?: string;
}

export interface ChartMarker {
  /** Unix seconds. */
  t: number;
  kind: string;
}

export const MARKER_COLORS: Record<string, string> = {
  touch: '#8e24aa',
  motion: '#ef6c00',
  contact: '#00897b',
  objectPresent: '#3949ab',
  deskOccupancy: '#6d4c41',
  waterPresent: '#0288d1',
  alert: '#d32f2f',
};
/** How the legend names a marker kind (event types by their own name). */
const MARKER_NAMES: Record<string, string> = { alert: 'alert triggered' };
const SERIES_COLORS = ['#1e88e5', '#e53935', '#43a047', '#fb8c00'];

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

/** Aligns several series on one sorted x axis (uPlot's data shape), with nulls where a series has no point. */
function align(series: ChartSeries[], from: number, to: number): (number | null)[][] {
  const xs = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  if (xs.length === 0) return [[from, to], ...series.map(() => [null, null])];
  const index = new Map(xs.map((x, i) => [x, i]));
  return [
    xs,
    ...series.map((s) => {
      const col: (number | null)[] = new Array(xs.length).fill(null);
      for (const [x, y] of s.points) col[index.get(x)!] = y;
      return col;
    }),
  ];
}

export function TimeChart(props: {
  title: string;
  series: ChartSeries[];
  markers?: ChartMarker[];
  from: number;
  to: number;
  height?: number;
  bars?: boolean;
}) {
  const box = useRef<HTMLDivElement>(null);
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => {
    let plot: { destroy(): void; setSize(s: { width: number; height: number }): void } | null = null;
    let observer: ResizeObserver | null = null;
    let cancelled = false;
    (async () => {
      const [{ default: uPlot }] = await Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]);
      if (cancelled || !box.current) return;
      const text = cssVar('--text-muted', '#666');
      const grid = cssVar('--border', '#ddd');
      const markers = props.markers ?? [];
      const width = Math.max(280, box.current.clientWidth);
      const hasSeries = props.series.length > 0;
      const opts = {
        width,
        height: props.height ?? 220,
        title: undefined,
        scales: { x: { time: true, range: (): [number, number] => [props.from, props.to] } },
        axes: [
          { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } },
          { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, show: hasSeries, size: 56 },
        ],
        series: [
          {},
          ...(hasSeries ? props.series : [{ label: 'events', points: [] }]).map((s, i) => ({
            label: s.label,
            stroke: s.color ?? SERIES_COLORS[i % SERIES_COLORS.length],
            width: 2,
            spanGaps: true,
            points: { show: !props.bars, size: 4 },
            ...(props.bars
              ? {
                  paths: uPlot.paths.bars!({ size: [0.8, 12] }),
                  fill: `${s.color ?? SERIES_COLORS[i % SERIES_COLORS.length]}99`,
                }
              : {}),
          })),
        ],
        legend: { show: hasSeries },
        hooks: {
          draw: [
            (u: any) => {
              const ctx: CanvasRenderingContext2D = u.ctx;
              ctx.save();
              ctx.lineWidth = 2 * devicePixelRatio;
              for (const m of markers) {
                const x = Math.round(u.valToPos(m.t, 'x', true));
                if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
                ctx.strokeStyle = MARKER_COLORS[m.kind] ?? text;
                // An alert's marker is dashed, with a flag at the top, so it stands out from the events'.
                ctx.setLineDash(m.kind === 'alert' ? [6 * devicePixelRatio, 4 * devicePixelRatio] : []);
                ctx.beginPath();
                ctx.moveTo(x, u.bbox.top);
                ctx.lineTo(x, u.bbox.top + u.bbox.height);
                ctx.stroke();
                if (m.kind === 'alert') {
                  const s = 6 * devicePixelRatio;
                  ctx.fillStyle = MARKER_COLORS.alert!;
                  ctx.beginPath();
                  ctx.moveTo(x - s, u.bbox.top);
                  ctx.lineTo(x + s, u.bbox.top);
                  ctx.lineTo(x, u.bbox.top + s * 1.4);
                  ctx.closePath();
                  ctx.fill();
                }
              }
              ctx.setLineDash([]);
              ctx.restore();
            },
          ],
        },
      };
      const data = align(hasSeries ? props.series : [{ label: 'events', points: [] }], props.from, props.to);
      plot = new uPlot(opts as any, data as any, box.current);
      observer = new ResizeObserver(() => {
        if (box.current && plot)
          plot.setSize({ width: Math.max(280, box.current.clientWidth), height: props.height ?? 220 });
      });
      observer.observe(box.current);
    })().catch((err) => setFailed(String(err)));
    return () => {
      cancelled = true;
      observer?.disconnect();
      plot?.destroy();
    };
  }, [props.series, props.markers, props.from, props.to]);
  return (
    // The x range drawn (unix seconds), for the tests: uPlot's scale is set to exactly these.
    <figure class="chart" data-x-from={props.from} data-x-to={props.to}>
      <figcaption>{props.title}</figcaption>
      {failed ? <p class="error">The chart could not be drawn: {failed}</p> : null}
      <div
        ref={box}
        class="chart-box"
        role="img"
        aria-label={`${props.title}: ${props.series.map((s) => `${s.label}, ${s.points.length} points`).join('; ') || 'event markers only'}`}
      />
      {props.markers && props.markers.length > 0 ? (
        <ul class="marker-legend" aria-label="Markers">
          {[...new Set(props.markers.map((m) => m.kind))].map((k) => (
            <li key={k}>
              <span class={`swatch swatch-${k}`} aria-hidden="true" />
              {MARKER_NAMES[k] ?? k} ({props.markers!.filter((m) => m.kind === k).length})
            </li>
          ))}
        </ul>
      ) : null}
    </figure>
  );
}
