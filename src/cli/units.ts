import { invalidOption } from '../errors.js'
import { parseSizeBytes } from '../sketch/sizing.js'

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * Parse a duration: a number with a unit `ms`, `s`, `m`/`min`, `h` or `d` (`"10m"`,
 * `"1.5h"`, `"250ms"`); a bare number is milliseconds.
 * @param option the option name for the error
 * @returns the duration in ms
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for anything else or a negative value
 */
export function parseDurationMs(option: string, text: string): number {
  const m = /^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(ms|s|m|min|h|d)?\s*$/i.exec(text)
  if (m === null) invalidOption(option, 'a duration such as 250ms, 30s, 10m, 1h or 1d', text)
  return Number(m[1]) * DURATION_UNITS[(m[2] ?? 'ms').toLowerCase()]
}

/**
 * Parse a memory size: a number with `B`, `KB`/`KiB`, `MB`/`MiB`, `GB`/`GiB` (all
 * powers of 1024, as Redis and Node read them); a bare number is bytes. The rule lives in
 * `parseSizeBytes` (src/sketch/sizing.ts), which the policies' `memory` option reads too.
 * @returns the size in bytes (rounded down), ≥ 1
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for anything else
 */
export function parseBytes(option: string, text: string): number {
  return parseSizeBytes(option, text)
}

/**
 * Parse abuse weights `name=weight,name=weight` (`"401=3,404=1,5xx=0,2xx=-0.5"`,
 * `"failed=1,invalid=2,accepted=-3"`).
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a pair without `=` or a weight that is not a finite number
 */
export function parseWeights(option: string, text: string): Record<string, number> {
  const out: Record<string, number> = {}
  for (const part of text.split(',')) {
    const p = part.trim()
    if (p === '') continue
    const eq = p.indexOf('=')
    if (eq <= 0) invalidOption(option, 'name=weight pairs separated by commas, e.g. 401=3,4xx=1,2xx=-0.5', text)
    const w = Number(p.slice(eq + 1))
    if (p.slice(eq + 1).trim() === '' || !Number.isFinite(w))
      invalidOption(`${option}.${p.slice(0, eq)}`, 'a finite number', p.slice(eq + 1))
    out[p.slice(0, eq).trim()] = w
  }
  if (Object.keys(out).length === 0) invalidOption(option, 'at least one name=weight pair', text)
  return out
}

/** Bytes as a short human string: `512 B`, `1.5 KiB`, `8.0 MiB`. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`
  return `${(n / 1024 ** 3).toFixed(2)} GiB`
}

/** A duration in ms as a short human string: `850 ms`, `42 s`, `3 min 20 s`, `2 h 5 min`, `3 d 4 h`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  const s = Math.round(ms / 1000)
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`
  if (s < 86400)
    return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)} min` : ''}`
  return `${Math.floor(s / 86400)} d${Math.floor((s % 86400) / 3600) ? ` ${Math.floor((s % 86400) / 3600)} h` : ''}`
}

/** A UTC time as `2015-05-17 10:05:03Z`. */
export function formatTime(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.000Z$/, 'Z')
}

/**
 * A rate or a ratio in 3 significant digits: plain between 1e-3 and 1e5 (`0.0206`, `3.5`),
 * else exponential (`3.14e-7`); `0` for 0.
 * @param n a finite number
 */
export function formatSignificant(n: number): string {
  if (n === 0) return '0'
  const a = Math.abs(n)
  return a >= 1e-3 && a < 1e5 ? String(Number(n.toPrecision(3))) : n.toExponential(2)
}
