import { distinctKeysText } from './distinct.js'
import { sizeRows, sketchMemoryText, type ReplayReport } from './replay-report.js'
import { formatBytes, formatDuration, formatSignificant, formatTime } from './units.js'

/** Escape text for HTML content and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) =>
    c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;',
  )
}

function num(n: number): string {
  return n.toLocaleString('en-US')
}

function f1(n: number): string {
  return (Math.round(n * 10) / 10).toString()
}

const W = 960
const H = 280
const PAD_L = 56
const PAD_R = 16
const PAD_T = 16
const PAD_B = 40

/** A "nice" upper bound for an axis: 1, 2 or 5 × 10^k at or above `v`. */
function niceCeil(v: number): number {
  if (v <= 0) return 1
  const p = Math.pow(10, Math.floor(Math.log10(v)))
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p
  return 10 * p
}

/** Round tick steps for the time axis (ms): 1, 5, 15, 30 min, 1, 3, 6, 12 h, 1, 2, 7 days. */
const TICK_STEPS_MS = [1, 5, 15, 30, 60, 180, 360, 720, 1440, 2880, 10_080].map((m) => m * 60_000)
/** The most time ticks drawn: labels are about 80 px wide on an 888 px axis. */
const MAX_TICKS = 8
/** The least height of a rejected segment (px), so that a bin with few rejections still shows red. */
const MIN_REJECTED_PX = 3

/**
 * Time-axis ticks at round UTC times: every multiple of the smallest step of
 * {@link TICK_STEPS_MS} that puts at most {@link MAX_TICKS} ticks in [t0, t1].
 * @param t0 start of the axis, ms since the epoch
 * @param t1 end of the axis, ms since the epoch (> t0)
 * @returns the tick times (ms), ascending, and the step
 */
export function timeTicks(t0: number, t1: number): { stepMs: number; ticks: number[] } {
  const stepMs = TICK_STEPS_MS.find((s) => (t1 - t0) / s <= MAX_TICKS) ?? TICK_STEPS_MS[TICK_STEPS_MS.length - 1]
  const ticks: number[] = []
  for (let t = Math.ceil(t0 / stepMs) * stepMs; t <= t1; t += stepMs) ticks.push(t)
  return { stepMs, ticks }
}

/**
 * The timeline: one stacked bar per non-empty bin, admitted (`rect.bar.admitted`) under
 * rejected (`rect.bar.rejected`); a bar with a count of 0 is not drawn. A rejected segment
 * is at least {@link MIN_REJECTED_PX} high, and every bin with rejections also gets a red mark
 * under the axis (`rect.rejected-mark`), so a few rejections beside many admissions stay
 * visible. Each bar carries a `<title>` tooltip with its bin, counts and the reference's
 * rejections. Time ticks fall at round UTC times ({@link timeTicks}).
 */
export function timelineSvg(r: ReplayReport): string {
  const bins = r.timeline.bins
  const binMs = r.timeline.binMs
  const parts: string[] = []
  parts.push(
    `<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="requests admitted and rejected per ${escapeHtml(formatDuration(binMs))}">`,
  )
  if (bins.length === 0) {
    parts.push(`<text x="${W / 2}" y="${H / 2}" text-anchor="middle">no requests</text></svg>`)
    return parts.join('')
  }
  const t0 = bins[0].startMs
  const t1 = bins[bins.length - 1].startMs + binMs
  const plotW = W - PAD_L - PAD_R
  const plotH = H - PAD_T - PAD_B
  const maxY = niceCeil(Math.max(...bins.map((b) => b.admitted + b.rejected)))
  const x = (t: number): number => PAD_L + ((t - t0) / (t1 - t0)) * plotW
  const y = (v: number): number => PAD_T + plotH - (v / maxY) * plotH
  const slot = (binMs / (t1 - t0)) * plotW
  const barW = Math.max(1, slot > 4 ? slot * 0.85 : slot)
  // axes and grid
  for (const v of [0, maxY / 2, maxY]) {
    parts.push(`<line class="grid" x1="${PAD_L}" x2="${W - PAD_R}" y1="${f1(y(v))}" y2="${f1(y(v))}"/>`)
    parts.push(`<text class="tick" x="${PAD_L - 6}" y="${f1(y(v) + 4)}" text-anchor="end">${num(v)}</text>`)
  }
  const { stepMs, ticks } = timeTicks(t0, t1)
  for (const t of ticks) {
    const iso = new Date(t).toISOString()
    // whole days read as a date; within a day the time matters, and the date at midnight
    const label = stepMs >= 86_400_000 || iso.slice(11, 16) === '00:00' ? iso.slice(5, 10) : iso.slice(11, 16)
    parts.push(`<line class="grid tick-line" x1="${f1(x(t))}" x2="${f1(x(t))}" y1="${y(0)}" y2="${y(0) + 4}"/>`)
    parts.push(`<text class="tick" x="${f1(x(t))}" y="${H - PAD_B + 20}" text-anchor="middle">${label}</text>`)
  }
  parts.push(
    `<text class="tick" x="${W - PAD_R}" y="${H - 6}" text-anchor="end">UTC, one bar per ${escapeHtml(formatDuration(binMs))}</text>`,
  )
  for (const b of bins) {
    const bx = f1(x(b.startMs))
    const tip = `${formatTime(b.startMs)}: ${num(b.admitted)} admitted, ${num(b.rejected)} rejected (reference: ${num(b.referenceRejected)} rejected)`
    if (b.admitted > 0) {
      const top = y(b.admitted)
      parts.push(
        `<rect class="bar admitted" x="${bx}" y="${f1(top)}" width="${f1(barW)}" height="${f1(y(0) - top)}"><title>${escapeHtml(tip)}</title></rect>`,
      )
    }
    if (b.rejected > 0) {
      const base = y(b.admitted)
      const top = Math.min(y(b.admitted + b.rejected), base - MIN_REJECTED_PX)
      parts.push(
        `<rect class="bar rejected" x="${bx}" y="${f1(top)}" width="${f1(barW)}" height="${f1(base - top)}"><title>${escapeHtml(tip)}</title></rect>`,
      )
      parts.push(
        `<rect class="rejected-mark" x="${bx}" y="${f1(y(0) + 6)}" width="${f1(Math.max(2, barW))}" height="4"><title>${escapeHtml(tip)}</title></rect>`,
      )
    }
  }
  parts.push(`<line class="axis" x1="${PAD_L}" x2="${W - PAD_R}" y1="${y(0)}" y2="${y(0)}"/>`)
  parts.push('</svg>')
  return parts.join('')
}

/** Horizontal bars of the most throttled keys (`rect.key-bar`), rejected by the sketch, with the reference's count as a tick. */
export function topKeysSvg(r: ReplayReport): string {
  const top = r.throttled.top
  const rowH = 24
  const labelW = 260
  const h = Math.max(1, top.length) * rowH + 8
  const parts: string[] = [
    `<svg class="top-keys" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${h}" width="${W}" height="${h}" role="img" aria-label="most throttled keys">`,
  ]
  if (top.length === 0) {
    parts.push(`<text x="8" y="18">no key was throttled</text></svg>`)
    return parts.join('')
  }
  const max = Math.max(...top.map((k) => Math.max(k.rejected, k.referenceRejected)))
  const barMax = W - labelW - 120
  top.forEach((k, i) => {
    const yy = 4 + i * rowH
    const label = k.key.length > 36 ? k.key.slice(0, 35) + '…' : k.key
    const w = Math.max(1, (k.rejected / max) * barMax)
    const rx = labelW + (k.referenceRejected / max) * barMax
    parts.push(`<text class="key-label" x="${labelW - 8}" y="${yy + 16}" text-anchor="end">${escapeHtml(label)}</text>`)
    parts.push(
      `<rect class="key-bar" x="${labelW}" y="${yy + 3}" width="${f1(w)}" height="${rowH - 8}"><title>${escapeHtml(`${k.key}: ${num(k.rejected)} of ${num(k.requests)} rejected (reference ${num(k.referenceRejected)}), ${formatTime(k.startedMs)} → ${formatTime(k.endedMs)}`)}</title></rect>`,
    )
    parts.push(`<line class="ref-tick" x1="${f1(rx)}" x2="${f1(rx)}" y1="${yy + 1}" y2="${yy + rowH - 3}"/>`)
    parts.push(`<text class="tick" x="${f1(labelW + w + 6)}" y="${yy + 16}">${num(k.rejected)}</text>`)
  })
  parts.push('</svg>')
  return parts.join('')
}

/**
 * A self-contained HTML page of a replay report: summary, timeline chart, the most
 * throttled keys, the comparison with the exact reference. Inline CSS and SVG only: no
 * script, no external asset, so it opens from a file anywhere. Every text from the log is
 * escaped.
 * @param r the report
 * @param source the input's name
 */
export function renderHtml(r: ReplayReport, source: string): string {
  const t = r.totals
  const ref = r.reference
  const i = r.input
  const rows: [string, string][] = [
    ['input', `${source} (${i.format})`],
    ['lines read / parsed / unparseable', `${num(i.linesRead)} / ${num(i.linesParsed)} / ${num(i.linesUnparseable)}`],
    [
      'time span',
      r.span.start
        ? `${formatTime(r.span.startMs)} → ${formatTime(r.span.endMs)} (${formatDuration(r.span.durationMs)})`
        : '—',
    ],
    ['out of order (late)', `${num(i.outOfOrder)} (${num(i.late)})`],
    ['policy', `${r.sketch.policies.join('; ')}; key ${r.config.key}`],
    ['requests', num(t.requests)],
    ['admitted', num(t.admitted)],
    ['rejected', num(t.rejected)],
    ['distinct keys', distinctKeysText(r.distinctKeys, num)],
    ['keys ever throttled', num(r.throttled.distinctKeys)],
    ['sketch memory', sketchMemoryText(r.sketch, formatBytes, num)],
  ]
  const sizeTable = Object.entries(r.sketch.sizes)
    .map(([policy, points]) => {
      const { rows: kept, omitted } = sizeRows(points)
      return (
        kept
          .map(
            (p) =>
              `<tr><td>${policy}</td><td>${formatTime(p.atMs)}</td><td>${num(p.rotation)}${p.early === true ? ' (early growth)' : ''}</td><td>${p.cellsPerLevel.map(num).join(' ')}</td><td>${formatSignificant(p.loadPerSecond)}</td><td>${formatSignificant(p.loadFactor)}</td><td>${formatSignificant(p.predictedFalseRejectRate)}</td></tr>`,
          )
          .join('\n') +
        (omitted > 0
          ? `\n<tr><td>${policy}</td><td colspan="6">… ${num(omitted)} more points (the JSON report lists them all)</td></tr>`
          : '')
      )
    })
    .join('\n')
  const topRows = r.throttled.top
    .map(
      (k) =>
        `<tr><td class="key">${escapeHtml(k.key)}</td><td>${num(k.rejected)}</td><td>${num(k.referenceRejected)}</td><td>${num(k.requests)}</td><td>${formatTime(k.startedMs)}</td><td>${formatTime(k.endedMs)}</td></tr>`,
    )
    .join('\n')
  const list = (keys: string[], count: number): string =>
    count === 0
      ? 'none'
      : keys.map((k) => `<code>${escapeHtml(k)}</code>`).join(', ') +
        (count > keys.length ? ` … (${num(count)} in all)` : '')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>grudge replay: ${escapeHtml(source)}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1d2330; background: #fff; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; } td, th { padding: 3px 10px; border-bottom: 1px solid #e3e6ec; text-align: left; }
td.key { font-family: ui-monospace, monospace; }
.timeline .bar.admitted { fill: #3b7dd8; } .timeline .bar.rejected, .timeline .rejected-mark { fill: #d8453b; }
.grid { stroke: #e3e6ec; } .axis { stroke: #8a93a6; } .tick { font-size: 11px; fill: #5a6275; }
.key-bar { fill: #d8453b; } .ref-tick { stroke: #1d2330; stroke-width: 2; } .key-label { font: 12px ui-monospace, monospace; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 14px; vertical-align: -2px; }
</style>
</head>
<body>
<h1>grudge replay: ${escapeHtml(source)}</h1>
<table class="summary">
${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join('\n')}
</table>
<h2>Requests over time</h2>
<div class="legend"><span style="background:#3b7dd8"></span>admitted<span style="background:#d8453b"></span>rejected by grudge (at least ${MIN_REJECTED_PX} px high, and marked under the axis)</div>
${timelineSvg(r)}
<h2>Most throttled keys</h2>
<p>Bars: requests rejected by grudge; black tick: rejected by the exact per-key reference.</p>
${topKeysSvg(r)}
<table class="top">
<tr><th>key</th><th>rejected</th><th>reference</th><th>requests</th><th>throttled from</th><th>to</th></tr>
${topRows}
</table>
<h2>Sizes over time</h2>
<p>Cells per level of each generation (oldest, the one that decides, first) at the start and after each rotation that resized one, the load since the row before, the load factor ρ of the deciding generation and the false-reject (rate) or false-block (abuse) rate the capacity model predicts for a fresh key.</p>
<table class="sizes">
<tr><th>policy</th><th>time</th><th>rotation</th><th>cells per level</th><th>load/s</th><th>ρ</th><th>predicted</th></tr>
${sizeTable}
</table>
<h2>Sketch vs exact reference</h2>
<table class="reference">
<tr><th>decisions differing</th><td>${num(ref.decisionsDiffering)} of ${num(t.requests)}</td></tr>
<tr><th>reference admitted / rejected</th><td>${num(ref.admitted)} / ${num(ref.rejected)}</td></tr>
<tr><th>throttled by the sketch only</th><td>${list(ref.onlySketch, ref.onlySketchCount)}</td></tr>
<tr><th>throttled by the reference only</th><td>${list(ref.onlyReference, ref.onlyReferenceCount)}</td></tr>
</table>
</body>
</html>
`
}
