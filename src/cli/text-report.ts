import { distinctKeysText } from './distinct.js'
import { sizeRows, sketchMemoryText, type ReplayReport } from './replay-report.js'
import { formatBytes, formatDuration, formatSignificant, formatTime } from './units.js'

function pct(n: number, d: number): string {
  return d === 0 ? '0%' : `${((100 * n) / d).toFixed(n === 0 || n === d ? 0 : 2)}%`
}

function num(n: number): string {
  return n.toLocaleString('en-US')
}

/**
 * The human-readable report of `grudge replay`: plain text, one fact per line, for a
 * terminal 80 columns wide.
 * @param r the report
 * @param source the input's name (file path or `stdin`)
 * @param linesPerSecond replay speed to print, or undefined to leave it out
 */
export function formatReport(r: ReplayReport, source: string, linesPerSecond?: number): string {
  const out: string[] = []
  const i = r.input
  out.push(
    `grudge replay: ${source} (${i.format === 'access' ? 'access log' : i.format === 'auth' ? 'sshd auth log' : 'format not recognised'})`,
  )
  out.push('')
  out.push(`  lines read        ${num(i.linesRead)}`)
  out.push(`  lines parsed      ${num(i.linesParsed)}`)
  out.push(
    `  unparseable       ${num(i.linesUnparseable)}${i.linesUnparseable ? ` (first at line ${i.unparseableSamples[0].line})` : ''}`,
  )
  if (i.format === 'unknown' && i.linesRead > 0) {
    out.push(
      '  no line parsed as an access log (Common/Combined) or an sshd auth log; see --format and the samples below',
    )
  }
  if (i.format === 'auth') out.push(`  login events      ${num(i.events)}`)
  if (i.outOfOrder > 0) {
    out.push(
      `  out of order      ${num(i.outOfOrder)} lines put back in order (at most ${formatDuration(i.maxBackwardsMs)} back)`,
    )
    if (i.late > 0)
      out.push(
        `  late              ${num(i.late)} lines more than ${formatDuration(r.config.maxDisorderMs)} late, replayed at the time reached`,
      )
  }
  if (r.span.start)
    out.push(
      `  time span         ${formatTime(r.span.startMs)} → ${formatTime(r.span.endMs)} (${formatDuration(r.span.durationMs)})`,
    )
  if (linesPerSecond !== undefined) out.push(`  replay speed      ${num(Math.round(linesPerSecond))} lines/s`)
  out.push('')
  out.push(`policy: ${r.sketch.policies.join('; ')}; key ${r.config.key}`)
  out.push('')
  const t = r.totals
  out.push(`  requests          ${num(t.requests)}`)
  out.push(`  admitted          ${num(t.admitted)} (${pct(t.admitted, t.requests)})`)
  out.push(`  rejected          ${num(t.rejected)} (${pct(t.rejected, t.requests)})`)
  const dk = r.distinctKeys
  out.push(`  distinct keys     ${distinctKeysText(dk, num)}`)
  out.push(`  keys throttled    ${num(r.throttled.distinctKeys)}`)
  out.push(`  sketch memory     ${sketchMemoryText(r.sketch, formatBytes, num)}`)
  out.push('')
  const sizes = Object.entries(r.sketch.sizes)
  if (sizes.length > 0) {
    out.push(
      `sizes over time (cells per level of each generation, oldest first; load since the row before; ${num(r.sketch.rotations)} rotations)`,
    )
    out.push(
      `  ${'policy'.padEnd(6)}  ${'time'.padEnd(20)}  ${'cells'.padEnd(15)}  ${'load/s'.padStart(8)}  ${'ρ'.padStart(8)}  predicted`,
    )
    for (const [policy, points] of sizes) {
      const { rows, omitted } = sizeRows(points)
      for (const p of rows)
        out.push(
          `  ${policy.padEnd(6)}  ${formatTime(p.atMs)}  ${p.cellsPerLevel.map(num).join(' ').padEnd(15)}  ${formatSignificant(p.loadPerSecond).padStart(8)}  ${formatSignificant(p.loadFactor).padStart(8)}  ${formatSignificant(p.predictedFalseRejectRate)}${p.early === true ? '  (early growth)' : ''}`,
        )
      if (omitted > 0) out.push(`  ${policy.padEnd(6)}  … ${num(omitted)} more points (--json lists them all)`)
    }
    out.push('')
  }
  if (r.throttled.top.length > 0) {
    out.push(`most throttled keys (sketch; reference in brackets)`)
    const w = Math.min(40, Math.max(3, ...r.throttled.top.map((k) => k.key.length)))
    out.push(`  ${'key'.padEnd(w)}  ${'rejected'.padStart(16)}  ${'of'.padStart(7)}  throttled from → to`)
    for (const k of r.throttled.top) {
      const key = k.key.length > w ? k.key.slice(0, w - 1) + '…' : k.key
      const rej = `${num(k.rejected)} [${num(k.referenceRejected)}]`
      out.push(
        `  ${key.padEnd(w)}  ${rej.padStart(16)}  ${num(k.requests).padStart(7)}  ${formatTime(k.startedMs)} → ${formatTime(k.endedMs)}`,
      )
    }
    out.push('')
  }
  const ref = r.reference
  out.push(`exact per-key reference on the same input`)
  out.push(
    `  admitted          ${num(ref.admitted)}   rejected ${num(ref.rejected)}   keys throttled ${num(ref.distinctKeysThrottled)}`,
  )
  out.push(
    `  decisions differing from the sketch: ${num(ref.decisionsDiffering)} of ${num(t.requests)} (${pct(ref.decisionsDiffering, t.requests)})`,
  )
  out.push(
    `  throttled by the sketch only:    ${num(ref.onlySketchCount)}${ref.onlySketch.length ? '  ' + ref.onlySketch.slice(0, 5).join(', ') + (ref.onlySketchCount > 5 ? ', …' : '') : ''}`,
  )
  out.push(
    `  throttled by the reference only: ${num(ref.onlyReferenceCount)}${ref.onlyReference.length ? '  ' + ref.onlyReference.slice(0, 5).join(', ') + (ref.onlyReferenceCount > 5 ? ', …' : '') : ''}`,
  )
  if (i.linesUnparseable > 0) {
    out.push('')
    out.push('unparseable lines (first ones):')
    for (const s of i.unparseableSamples) out.push(`  ${s.line}: ${s.text}`)
  }
  return out.join('\n') + '\n'
}
