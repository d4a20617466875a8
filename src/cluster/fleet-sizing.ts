import { GrudgeError } from '../errors.js'
import type { Decay } from '../sketch/shape.js'
import {
  earlyGrowthCells,
  initialCellsPerLevel,
  sizeFromLoad,
  sizeNextWithHysteresis,
  sizingLimitEvent,
  type GenerationLoad,
  type LoadMeter,
  type ResolvedSizing,
  type SizingLimitEvent,
} from '../sketch/rotator-sizing.js'
import type { RedisLike } from './client.js'
import type { StoreSpec } from '../limit/store.js'
import type { ParsedRedisOptions } from './options.js'
import {
  evalScript,
  fingerprintError,
  fleetShape,
  replyError,
  shaOf,
  type FleetShape,
  type RedisStoreEvent,
} from './connection.js'

// The fleet's agreement on each generation's shape (spec/cluster.md, "Shapes"): the first
// instance that opens (or, half a period ahead, proposes) a generation records its cells per
// level in Redis with a set-if-absent, and every instance adopts what is recorded. An
// instance's own load meter only sizes generations not yet recorded. The record lives as
// long as its generation's cells. Kept apart from the cell scripts (scripts.ts): a shape
// round trip happens once per generation and per sync, never on a request.

/**
 * The shape script. KEYS: for each of n generation ids, its shape record `P s<id>` then its
 * cells `P g<id>`; then the fleet's cost counter of the youngest generation `P c<id>`, then
 * the fingerprint record `P fp` (all of slot 0, `P` its key prefix).
 * ARGV: 1 now in ms (empty: Redis `TIME`), 2 periodMs, 3 L, 4 n, 5 this instance's admitted
 * cost for the counter since its last report (a decimal, ≥ 0), 6 the counter's generation
 * id, then per generation: its id and the record to propose (`<fingerprint>:<M>`, checked by
 * the caller) or the empty string to read only; then the fingerprint (7 + 2n), S, the
 * slots (8 + 2n; absent: 1) and, in exact mode, the blocked layout's widest block BLOCK_CELLS
 * (9 + 2n; absent or empty: the level-major layout); then, for the fleet's adoption lag
 * (spec/cluster.md "Early growth", _The fleet's adoption lag_), this instance's own lag D in
 * whole ms (10 + 2n; absent: none of what follows) and the time in ms its twin proposals'
 * switches were computed from (11 + 2n), with the fleet lag record `P lag` as KEYS[2n + 3].
 *
 * The fleet lag record is a hash of lag → until: every round sets field D (its own lag) to
 * max(stored, now + D), deletes the fields whose until is before now, and takes `last`, the
 * latest until of the fields left (its own `now + D` included), the key expiring with it. Each
 * twin proposal (a record `<fp>:<switch>:<M>…`, two numbers, switch sw = t_c + A + D from the
 * proposer's time t_c, ARGV 11 + 2n) is then moved to
 * `max(sw − t_c + max(now, t_c), last + A)`, A = max(0, sw − t_c − D) the promotion age it
 * included (0: a folding twin), so its switch is at least every live field's until (each one
 * the end of the base writes of an instance resting on its last read of "no twin") plus that
 * age; a proposal moved to or past its generation's end (`(id + 1)·periodMs`) is not recorded
 * (its record in the reply is then '').
 *
 * Per generation: the record is read; when absent and a proposal is given it is set (expiring
 * with the generation, at `(id + 2)·periodMs`) and slot 0's cells of the generation are
 * created at their full size L·ceil(M / S)·16, in exact mode B·L·W·16 (`blockShape(ceil(M / S))`),
 * so the cell scripts never allocate them at the largest shape; the other slots' strings, on
 * other hash tags, are created by the sync or sized exact script at the size it is given.
 * Reply: `{cost total of the counter, record_1, …, record_n}` (a missing record is ''), with
 * the fleet's adoption lag (ARGV 10 + 2n given) one more element
 * `<F>:<D_last>:<W>[:<id>:<switch>]…`: F the largest lag of the fields left, D_last the lag of
 * the field whose until is the latest, W = ceil(last − now) ms, then each proposal dropped
 * although its own rewrite (`sw − t_c + max(now, t_c)`) was before its generation's end (another
 * instance's field moved it past: {@link FleetLagReply}) with the switch it was moved to; or,
 * changing nothing, `{-1, stored}` when `P fp` holds another fingerprint (ARGV 7 + 2n) and
 * `{-3, period}` when it holds another period (the caller adopts it, as after the cell
 * scripts' −3, and asks again: ids are by period).
 * @internal
 */
export const shapeScript = `
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
else
  now = tonumber(ARGV[1])
end
local period = tonumber(ARGV[2])
local L = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
-- slots: the cells key given is slot 0's, which holds ceil(M / S) cells per level (absent: 1)
local S = tonumber(ARGV[8 + 2 * n]) or 1
-- exact mode's blocked layout: blocks of W = min(Wmax, ceil(M / S)) cells per level (absent: none)
local Wmax = tonumber(ARGV[9 + 2 * n])
local function slotCells(M)
  local Ms = math.ceil(M / S)
  if not Wmax then return Ms end
  local W = math.min(Wmax, Ms)
  return math.ceil(Ms / W) * W
end
local function ttl(k)
  local ms = math.ceil((k + 2) * period - now)
  if ms < 1 then ms = 1 end
  return ms
end
local fpraw = redis.call('GET', KEYS[2 * n + 2])
if fpraw then
  local sfp, sp = string.match(fpraw, '^(%x+):([^:]+):')
  if sfp ~= ARGV[7 + 2 * n] then return {-1, fpraw} end
  if tonumber(sp) ~= period then return {-3, sp} end
end
-- the fleet's adoption lag: every round registers its own, a proposal waits for every live until
local ownLag = tonumber(ARGV[10 + 2 * n])
local base, last, lastLag, fleetLag
if ownLag then
  local lk = KEYS[2 * n + 3]
  local mine = now + ownLag
  local stored = tonumber(redis.call('HGET', lk, ARGV[10 + 2 * n]))
  if not stored or stored < mine then redis.call('HSET', lk, ARGV[10 + 2 * n], string.format('%.17g', mine)) end
  local all = redis.call('HGETALL', lk)
  fleetLag = ownLag
  last = mine
  lastLag = ownLag
  for i = 1, #all, 2 do
    local u = tonumber(all[i + 1])
    local d = tonumber(all[i])
    if not u or not d or u < now then
      redis.call('HDEL', lk, all[i])
    else
      if d > fleetLag then fleetLag = d end
      if u > last then
        last = u
        lastLag = d
      end
    end
  end
  redis.call('PEXPIRE', lk, math.ceil(last - now) + 1)
  base = tonumber(ARGV[11 + 2 * n]) or now
end
-- the proposals dropped for another instance's field: id, moved switch
local dropped = {}
local out = {}
local cid = tonumber(ARGV[6])
local total = redis.call('INCRBYFLOAT', KEYS[2 * n + 1], ARGV[5])
redis.call('PEXPIRE', KEYS[2 * n + 1], ttl(cid))
out[1] = total
for j = 1, n do
  local id = tonumber(ARGV[5 + 2 * j])
  local want = ARGV[6 + 2 * j]
  local v = redis.call('GET', KEYS[2 * j - 1])
  if not v and want ~= '' and ownLag then
    local tfp, sw, rest = string.match(want, '^(%x+):(%d+)(:%d+.*)$')
    if tfp then
      sw = tonumber(sw)
      -- the promotion age the proposal included (0: a folding twin), and its own rewrite
      local age = math.max(0, sw - base - ownLag)
      local own = sw - base + math.max(now, base)
      local at = math.ceil(math.max(own, last + age))
      if at >= (id + 1) * period then
        want = ''
        if own < (id + 1) * period then
          dropped[#dropped + 1] = id
          dropped[#dropped + 1] = at
        end
      else
        want = tfp .. ':' .. string.format('%.17g', at) .. rest
      end
    end
  end
  if not v and want ~= '' then
    redis.call('SET', KEYS[2 * j - 1], want, 'PX', ttl(id))
    v = want
    local M = tonumber(string.match(want, ':(%d+)$'))
    if M and redis.call('EXISTS', KEYS[2 * j]) == 0 then
      redis.call('SETRANGE', KEYS[2 * j], L * slotCells(M) * 16 - 1, '\\0')
      redis.call('PEXPIRE', KEYS[2 * j], ttl(id))
    end
  end
  if v then out[j + 1] = v else out[j + 1] = '' end
end
if ownLag then
  local lagOut = string.format('%.17g:%.17g:%d', fleetLag, lastLag, math.ceil(last - now))
  for i = 1, #dropped do lagOut = lagOut .. ':' .. string.format('%.17g', dropped[i]) end
  out[n + 2] = lagOut
end
return out
`

/** The shape record of a generation: `<fingerprint>:<cells per level>`. @internal */
export function shapeRecord(shape: FleetShape, cellsPerLevel: number): string {
  return `${shape.fingerprint}:${cellsPerLevel}`
}

/** The key of generation `id`'s shape record. @internal */
export function shapeKey(shape: FleetShape, id: number): string {
  return `${shape.keyPrefix}s${id}`
}

/** The key of generation `id`'s fleet cost counter. @internal */
export function costKey(shape: FleetShape, id: number): string {
  return `${shape.keyPrefix}c${id}`
}

/**
 * Read a recorded shape: `<this fingerprint>:<M>` with M a power of two in [1, the largest
 * shape of this instance]. Anything else was not written by grudge for this policy.
 * @returns M
 * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_SHAPE` naming the key and what it held (a
 * fingerprint is keyed: it reveals nothing of the secret)
 * @internal
 */
export function parseShapeRecord(shape: FleetShape, id: number, raw: unknown): number {
  const text = typeof raw === 'string' ? raw : raw instanceof Uint8Array ? Buffer.from(raw).toString('latin1') : ''
  const m = /^([0-9a-f]{16}):([1-9][0-9]{0,9})$/.exec(text)
  const cells = m === null ? NaN : Number(m[2])
  if (
    m === null ||
    m[1] !== shape.fingerprint ||
    !(cells <= shape.cellsPerLevel) ||
    2 ** Math.round(Math.log2(cells)) !== cells
  ) {
    const shown = text.length > 0 ? JSON.stringify(text.slice(0, 80)) : describeRaw(raw)
    throw new GrudgeError(
      'ERR_GRUDGE_CLUSTER_SHAPE',
      `${shapeKey(shape, id)}: expected the shape record "${shape.fingerprint}:<M>" (M a power of two ≤ ${shape.cellsPerLevel}, this policy's largest shape), received ${shown}`,
    )
  }
  return cells
}

function describeRaw(raw: unknown): string {
  if (raw === null || raw === undefined || raw === '') return 'nothing'
  try {
    return JSON.stringify(raw)?.slice(0, 80) ?? typeof raw
  } catch {
    return typeof raw
  }
}

/**
 * The key of generation `id`'s early record (its _twin_: a larger generation of the same id
 * started early on a load jump, spec/cluster.md "Early growth"): `P s<id>+`. @internal
 */
export function twinKey(shape: FleetShape, id: number): string {
  return `${shape.keyPrefix}s${id}+`
}

/** The suffix of a twin's cells keys (`P g<id>+`, on every slot's prefix). @internal */
export const TWIN_SUFFIX = '+'

/**
 * The early record of a generation: `<fingerprint>:<switchAtMs>:<cells per level>`, the time
 * (server ms, an integer) from which the twin decides in place of its base, then its size. The
 * shape script reads the size as the record's last number, so it creates the twin's slot-0
 * cells at that size as for any record. A folding twin (exact mode, spec/cluster.md "Early
 * growth": made of its base's cells at its switch) ends in `:fold`, so the shape script, which
 * then finds no number at the end, creates no cells for it: its slot strings must not exist
 * before the switch (the first call after it that finds one missing folds it). @internal
 */
export function twinRecord(shape: FleetShape, switchAtMs: number, cellsPerLevel: number, fold = false): string {
  return `${shape.fingerprint}:${Math.ceil(switchAtMs)}:${cellsPerLevel}${fold ? ':fold' : ''}`
}

/** A twin as recorded: its cells per level, the server time from which it decides, whether it folds its base then. @internal */
export interface TwinShape {
  readonly cellsPerLevel: number
  readonly switchAtMs: number
  readonly fold: boolean
}

/**
 * Read an early record: '' or nothing is no twin; `<this fingerprint>:<switchAtMs>:<M>` with M
 * a power of two ≤ the largest shape and switchAtMs a non-negative integer of at most 16 digits,
 * optionally followed by `:fold` (a folding twin, see {@link twinRecord}).
 * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_SHAPE` naming the key and what it held
 * @internal
 */
export function parseTwinRecord(shape: FleetShape, id: number, raw: unknown): TwinShape | undefined {
  const text = typeof raw === 'string' ? raw : raw instanceof Uint8Array ? Buffer.from(raw).toString('latin1') : ''
  if (text === '') return undefined
  const m = /^([0-9a-f]{16}):([0-9]{1,16}):([1-9][0-9]{0,9})(:fold)?$/.exec(text)
  const cells = m === null ? NaN : Number(m[3])
  if (
    m === null ||
    m[1] !== shape.fingerprint ||
    !(cells <= shape.cellsPerLevel) ||
    2 ** Math.round(Math.log2(cells)) !== cells
  ) {
    throw new GrudgeError(
      'ERR_GRUDGE_CLUSTER_SHAPE',
      `${twinKey(shape, id)}: expected the early record "${shape.fingerprint}:<switch ms>:<M>[:fold]" (M a power of two ≤ ${shape.cellsPerLevel}, this policy's largest shape), received ${JSON.stringify(text.slice(0, 80))}`,
    )
  }
  return { cellsPerLevel: cells, switchAtMs: Number(m[2]), fold: m[4] !== undefined }
}

/** One generation asked of the shape script: its id and the record to propose, or '' to read only; `twin`: its early record (`P s<id>+`, cells `P g<id>+`). @internal */
export interface ShapeAsk {
  readonly id: number
  readonly want: string
  readonly twin?: boolean
}

/**
 * What a shape round with an adoption lag read of the fleet lag record (spec/cluster.md "Early
 * growth", _The fleet's adoption lag_), after registering its own. @internal
 */
export interface FleetLagReply {
  /** F, the largest adoption lag of the live fields (this instance's included), ms. */
  readonly fleetLagMs: number
  /** The lag of the field whose until is the latest, ms. */
  readonly latestLagMs: number
  /** How long after the script's now the latest until is, ms (≥ 0, rounded up). */
  readonly latestInMs: number
  /**
   * The twin proposals of the round that were not recorded because another instance's field
   * moved their switch to or past their generation's end (their own rewrite was before it): the
   * generation id and the switch they were moved to (server ms).
   */
  readonly dropped: readonly { readonly id: number; readonly switchAtMs: number }[]
}

/** What a shape round answered: the fleet's recorded period (nothing changed), or the cost counter's total and the recorded M of each ask. @internal */
export type ShapeAnswer =
  | { readonly periodMs: number }
  | {
      readonly periodMs?: undefined
      readonly costTotal: number
      /** Per ask: the recorded M (a twin ask: 0, see `twins`). */
      readonly cells: readonly number[]
      /** Per ask: a twin ask's record (undefined: none recorded, or not a twin ask). */
      readonly twins: readonly (TwinShape | undefined)[]
      /** The fleet lag record as the round left it (undefined: the round gave no lag). */
      readonly lag?: FleetLagReply
    }

/**
 * The key of the fleet lag record (spec/cluster.md "Early growth", _The fleet's adoption lag_):
 * `P lag`, a hash on slot 0 of adoption lag (whole ms) → the server ms until which a read of
 * "no twin" by an instance of that lag may still be trusted. @internal
 */
export function lagKey(shape: FleetShape): string {
  return `${shape.keyPrefix}lag`
}

/**
 * What a shape round tells the fleet lag record: this instance's adoption lag D in ms (> 0,
 * rounded up to whole ms) and the time in ms (server estimate, or the explicit clock) from
 * which its twin proposals' switches were computed. @internal
 */
export interface AdoptionLag {
  readonly ownLagMs: number
  readonly proposedAtMs: number
}

/**
 * One round trip of {@link shapeScript} on slot 0 (spec/cluster.md "Shapes"), shared by the
 * sync and the exact store: reports `cost` to generation `costGen`'s fleet counter, records
 * each ask's proposal if absent, and reads every ask's record (each one must be proposed:
 * a read-only ask that is absent is refused as a bad record).
 * @param clockArg the explicit time in ms as text, or '' for Redis `TIME`
 * @param blockCells exact mode: the widest block of the blocked layout, BLOCK_CELLS (absent: sync's level-major layout)
 * @param lag this instance's adoption lag, registered in the fleet lag record ({@link lagKey}), and
 * the time in ms the asks' twin proposals were computed from: each proposal's switch is moved
 * to at least every live field's until, plus its promotion age (spec/cluster.md "Early
 * growth"); the answer's `lag` tells what the record held and which proposals it dropped;
 * absent: neither
 * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_FINGERPRINT` (another fleet), `ERR_GRUDGE_CLUSTER_REPLY`
 * (a reply of another shape), `ERR_GRUDGE_CLUSTER_SHAPE` (a record this instance cannot adopt)
 * @internal
 */
export async function runShapeRound(
  client: RedisLike,
  shape: FleetShape,
  clockArg: string,
  periodMs: number,
  asks: readonly ShapeAsk[],
  cost: number,
  costGen: number,
  blockCells?: number,
  lag?: AdoptionLag,
): Promise<ShapeAnswer> {
  const keys: string[] = []
  const args: string[] = [
    clockArg,
    String(periodMs),
    String(shape.levels),
    String(asks.length),
    String(cost),
    String(costGen),
  ]
  for (const a of asks) {
    if (a.twin === true) keys.push(twinKey(shape, a.id), shape.keyPrefix + 'g' + a.id + TWIN_SUFFIX)
    else keys.push(shapeKey(shape, a.id), shape.keyPrefix + 'g' + a.id)
    args.push(String(a.id), a.want)
  }
  keys.push(costKey(shape, costGen), shape.fpKey)
  args.push(shape.fingerprint, String(shape.slots))
  if (blockCells !== undefined || lag !== undefined) args.push(blockCells === undefined ? '' : String(blockCells))
  if (lag !== undefined) {
    keys.push(lagKey(shape))
    args.push(String(Math.ceil(lag.ownLagMs)), String(lag.proposedAtMs))
  }
  const raw = await evalScript(client, shapeScript, shaOf(shapeScript), keys, args, false)
  if (!Array.isArray(raw) || raw.length < 1) throw replyError('redis shape script', raw)
  if (raw[0] === -1) throw fingerprintError(shape, String(raw[1]))
  if (raw[0] === -3) {
    const p = Number(String(raw[1]))
    if (!Number.isFinite(p) || p < 1) throw replyError('redis shape script (recorded period)', raw)
    return { periodMs: p }
  }
  if (raw.length !== 1 + asks.length + (lag === undefined ? 0 : 1)) throw replyError('redis shape script', raw)
  const cells = asks.map((a, j) => (a.twin === true ? 0 : parseShapeRecord(shape, a.id, raw[1 + j])))
  const twins = asks.map((a, j) => (a.twin === true ? parseTwinRecord(shape, a.id, raw[1 + j]) : undefined))
  const costTotal = Number(String(raw[0]))
  if (lag === undefined) return { costTotal, cells, twins }
  return { costTotal, cells, twins, lag: parseLagReply(raw[1 + asks.length], raw) }
}

/** The shape script's fleet lag element `<F>:<D_last>:<W>[:<id>:<switch>]…` ({@link FleetLagReply}). */
function parseLagReply(element: unknown, raw: unknown): FleetLagReply {
  const text =
    typeof element === 'string' ? element : element instanceof Uint8Array ? Buffer.from(element).toString() : ''
  const f = text.split(':').map(Number)
  if (f.length < 3 || f.length % 2 === 0 || !f.every((x) => Number.isFinite(x) && x >= 0)) {
    throw replyError('redis shape script (fleet lag)', raw)
  }
  const dropped: { id: number; switchAtMs: number }[] = []
  for (let i = 3; i < f.length; i += 2) dropped.push({ id: f[i], switchAtMs: f[i + 1] })
  return { fleetLagMs: f[0], latestLagMs: f[1], latestInMs: f[2], dropped }
}

/**
 * An instance's proposal for the next generation of a self-sized fleet policy: its sizer on
 * the youngest generation's load as its own meter measured it (distinct keys), with the
 * fleet's admitted cost rate `fleetCost / elapsedMs` (the fleet counter as last read plus
 * what this instance has not reported yet), resolved to a power of two within the budget,
 * growing at once and shrinking only with the margin (`sizeNextWithHysteresis`, the Rotator's
 * rule; the busiest check window is this instance's meter's). A decision that cannot be honoured is told to
 * `onSizingLimit` the first time for each kind (`reported` remembers). The one rule of the
 * sync and the exact store.
 * @param youngest the youngest generation's cells per level and decay
 * @param nowMs the time of the decision (the meter's clock)
 * @param elapsedMs how long the youngest generation has been the youngest, ms (≥ 1 is used)
 * @internal
 */
export function proposeCells(
  sizing: ResolvedSizing,
  meter: LoadMeter,
  youngest: { readonly cellsPerLevel: number; readonly decay: Decay },
  levels: number,
  generations: number,
  fleetCost: number,
  nowMs: number,
  elapsedMs: number,
  reported: { budget: boolean; invalid: boolean },
): number {
  const life = meter.lifeLoad(nowMs, {
    currentCellsPerLevel: youngest.cellsPerLevel,
    levels,
    generations,
    decay: youngest.decay,
    reason: 'rotation',
  })
  const ms = Math.max(1, elapsedMs)
  const load: GenerationLoad = { ...life, costPerSecond: (fleetCost * 1000) / ms, periodMs: ms }
  const { cells, limit, wanted } = sizeNextWithHysteresis(sizing, load, meter.peakWindowCostPerSecond())
  reportSizingLimit(sizing, reported, limit, wanted, cells, load, meter.peakWindowCostPerSecond())
  return cells
}

/**
 * Tell `sizing.onSizingLimit` once per kind (`reported` remembers which; a budget only from a
 * rotation's proposal, {@link sizingLimitEvent}) that a proposal hit the budget or met an invalid load; a logger's throw is swallowed (it is not the store's
 * failure). One home for {@link proposeCells} and {@link proposeEarlyCells}.
 */
function reportSizingLimit(
  sizing: ResolvedSizing,
  reported: { budget: boolean; invalid: boolean },
  limit: SizingLimitEvent['kind'] | undefined,
  wanted: SizingLimitEvent['wanted'],
  cells: number,
  load: GenerationLoad,
  peakWindowCostPerSecond?: number,
): void {
  // when to report (once per kind, a budget only from a rotation's life): the Rotator's rule
  const event = sizingLimitEvent(sizing, reported, limit, wanted, cells, load, peakWindowCostPerSecond)
  if (event === undefined) return
  try {
    sizing.onSizingLimit?.(event)
  } catch {
    // a logger's failure is not the store's
  }
}

/**
 * The promotion age A of a fleet generation (spec/rotator.md §1, _Promotion-age guard_): with
 * linear decay hi / rate × 1000 ms, the time in which any debt a fresh generation missed has
 * drained; otherwise (N − 1) × periodMs, the age of a regular promotion. A twin decides only
 * once it is this old plus the fleet's adoption lag.
 * @internal
 */
export function promotionAgeMs(decay: Decay, hi: number, generations: number, periodMs: number): number {
  return decay.kind === 'linear' ? (hi / decay.ratePerSecond) * 1000 : (generations - 1) * periodMs
}

/**
 * An instance's early-growth decision for the youngest generation of a self-sized fleet
 * policy (spec/cluster.md "Early growth"): the Rotator's rule (`earlyGrowthCells`) on this
 * instance's own meter over the window since its last check, capped so that the live
 * generations plus the twin hold no more than N × the largest shape (the budget: the twin
 * and its base are both held until the base retires). A decision that cannot be honoured is
 * told to `onSizingLimit` once per kind, as in {@link proposeCells}.
 * @param youngestCells cells per level of the youngest generation (what the window measured)
 * @param liveCells the sum of the cells per level of every generation this instance holds
 * @param nowMs the time of the check (the meter's clock)
 * @param fleetCostPerSecond the fleet's admitted cost per second over the window
 * (`fleetWindowRate`; NaN: unknown): the window's cost rate is the larger of it and this
 * instance's own, so a jump spread over n instances (each seeing ρ/n) is seen as the fleet's ρ
 * @returns cells per level of the twin to propose (> youngestCells), or 0 for none
 * @internal
 */
export function proposeEarlyCells(
  sizing: ResolvedSizing,
  meter: LoadMeter,
  youngest: { readonly cellsPerLevel: number; readonly decay: Decay },
  levels: number,
  generations: number,
  liveCells: number,
  nowMs: number,
  reported: { budget: boolean; invalid: boolean },
  fleetCostPerSecond = NaN,
): number {
  const own = meter.windowLoad(nowMs, {
    currentCellsPerLevel: youngest.cellsPerLevel,
    levels,
    generations,
    decay: youngest.decay,
    reason: 'check',
  })
  if (own === undefined) return 0
  const load = fleetCostPerSecond > own.costPerSecond ? { ...own, costPerSecond: fleetCostPerSecond } : own
  const wanted = earlyGrowthCells(sizing, load, (l) => {
    const r = sizeFromLoad(sizing, l)
    reportSizingLimit(sizing, reported, r.limit, r.wanted, r.cells, l)
    return r.cells
  })
  let room = generations * sizing.maxCellsPerLevel - liveCells
  let cap = 1
  while (cap * 2 <= room) cap *= 2
  if (room < 1) cap = 0
  room = Math.min(wanted, cap)
  return room > youngest.cellsPerLevel ? room : 0
}

/** Where the last early check left the fleet's cost of the youngest generation (see {@link fleetWindowRate}). @internal */
export interface FleetWindowMark {
  /** The youngest generation's id then (NaN: none). */
  gen: number
  /** The check's time, ms. */
  ms: number
  /** The fleet's admitted cost of `gen` as known then: the counter as last read plus this instance's not yet reported. */
  cost: number
}

/**
 * The fleet's admitted cost per second of the youngest generation over an early-check window,
 * for the sync and the exact store alike: the growth of what the instance knows of the fleet's
 * cost (the counter `P c<G>` as last read, plus its own cost not yet reported) since the last
 * check, over the time since. Other instances' cost arrives with their reports (each every
 * check, at most a window late), so a window's rate lags the fleet's by up to one window.
 * `mark` is moved to now. NaN for the first check of a generation, or no time passed.
 * @param fleetCost the fleet's cost of generation `gen` as known now (≥ 0)
 * @internal
 */
export function fleetWindowRate(mark: FleetWindowMark, gen: number, nowMs: number, fleetCost: number): number {
  const rate =
    mark.gen === gen && nowMs > mark.ms && fleetCost >= mark.cost
      ? ((fleetCost - mark.cost) * 1000) / (nowMs - mark.ms)
      : NaN
  mark.gen = gen
  mark.ms = nowMs
  mark.cost = fleetCost
  return rate
}

/**
 * The fleet shape of a policy and the cells per level of the generations it opens before any is
 * recorded, for the sync and the exact store alike: a fixed shape is its own (`fleetShape`);
 * a self-sized policy's fingerprint is its largest shape's (`sizing.maxCellsPerLevel`) with
 * `|sized|early`, and its initial size `sketch.cellsPerLevel` capped at the largest, else the largest
 * (`initialCellsPerLevel`).
 * @param sizing the policy's resolved sizing within the store's budget, or undefined for a fixed shape
 * @throws {GrudgeError} as `fleetShape` (`ERR_GRUDGE_OPTION_INVALID`, `ERR_GRUDGE_ROTATOR_AMNESTY`)
 * and `initialCellsPerLevel`
 * @internal
 */
export function policyFleetShape(
  spec: StoreSpec,
  o: ParsedRedisOptions,
  sizing: ResolvedSizing | undefined,
): { shape: FleetShape; initialCells: number } {
  if (sizing === undefined) {
    const shape = fleetShape(spec, o)
    return { shape, initialCells: shape.cellsPerLevel }
  }
  const shape = fleetShape({ ...spec, sketch: { ...spec.sketch, cellsPerLevel: sizing.maxCellsPerLevel } }, o, true)
  const given = spec.sketch?.cellsPerLevel
  return {
    shape,
    initialCells: initialCellsPerLevel(
      sizing,
      given === undefined ? undefined : Math.min(given, sizing.maxCellsPerLevel),
    ),
  }
}

/**
 * Sync mode's fold (spec/cluster.md "Early growth", _The fold_, one slot): make a folding
 * twin's cells `P g<k>+` of its base's `P g<k>` once every base push has landed.
 * KEYS: [1] the base's cells, [2] the twin's cells, [3] the twin's change log `P l<k>+`.
 * ARGV: 1 now in ms (empty: Redis `TIME`), 2 the earliest server ms of the fold (the switch plus
 * the guard, see {@link SYNC_FOLD_GUARD_TIMEOUTS}), 3 L, 4 the base's M, 5 the twin's M (a
 * multiple), 6 the generation id, 7 periodMs.
 * When the twin's cells exist (folded before, by any instance) the reply is 1 and nothing
 * changes; before the earliest fold time it is the base's cells string (empty when absent),
 * nothing changed: the caller folds it locally under its twin's sums (so an instance that never
 * pulled the base, one started after the switch, does not decide on a twin of zeros) and keeps
 * the sums for a later sync; otherwise the twin is created as each of the base's L level-major rows of M cells
 * repeated M′ / M times (zeros when the base is absent or not L·M·16 bytes, a base never
 * written), expiring with the generation, its change log deleted (the sync script starts it
 * anew, so every instance's first pull of the twin is full), and the reply is 1.
 * @internal
 */
export const syncFoldScript = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
else
  now = tonumber(ARGV[1])
end
if now < tonumber(ARGV[2]) then return redis.call('GET', KEYS[1]) or '' end
local L = tonumber(ARGV[3])
local M = tonumber(ARGV[4])
local M2 = tonumber(ARGV[5])
local ms = math.ceil((tonumber(ARGV[6]) + 2) * tonumber(ARGV[7]) - now)
if ms < 1 then ms = 1 end
local b = redis.call('GET', KEYS[1])
if b and #b == L * M * 16 then
  local rows = {}
  for i = 0, L - 1 do rows[i + 1] = string.rep(string.sub(b, i * M * 16 + 1, (i + 1) * M * 16), M2 / M) end
  redis.call('SET', KEYS[2], table.concat(rows), 'PX', ms)
else
  redis.call('SETRANGE', KEYS[2], L * M2 * 16 - 1, '\\0')
  redis.call('PEXPIRE', KEYS[2], ms)
end
redis.call('DEL', KEYS[3])
return 1
`

/**
 * How long after a sync-mode folding twin's switch Redis folds it, in timeoutMs: a push an
 * instance sent before its own switch (its server-time estimate off by at most half a round
 * trip) lands within timeoutMs, so every base push is in the base by switch + 2·timeoutMs.
 * @internal
 */
export const SYNC_FOLD_GUARD_TIMEOUTS = 2

/**
 * One round trip of {@link syncFoldScript} on slot 0: `true` when the twin of generation `id`
 * (`twinCells` per level, over a base of `baseCells`) is folded in Redis now, else the base's
 * cells string as Redis holds it (empty: absent) for the caller's local fold.
 * @param clockArg the explicit time in ms as text, or '' for Redis `TIME`
 * @param foldAtMs the earliest server ms of the fold
 * @throws the client's error, or `ERR_GRUDGE_CLUSTER_REPLY` for a reply other than 1 or a binary string
 * @internal
 */
export async function runSyncFold(
  client: RedisLike,
  shape: FleetShape,
  clockArg: string,
  id: number,
  baseCells: number,
  twinCells: number,
  foldAtMs: number,
  periodMs: number,
): Promise<true | Uint8Array> {
  const p = shape.keyPrefix
  const raw = await evalScript(
    client,
    syncFoldScript,
    shaOf(syncFoldScript),
    [`${p}g${id}`, `${p}g${id}${TWIN_SUFFIX}`, `${p}l${id}${TWIN_SUFFIX}`],
    [
      clockArg,
      String(foldAtMs),
      String(shape.levels),
      String(baseCells),
      String(twinCells),
      String(id),
      String(periodMs),
    ],
    true,
  )
  if (raw === 1) return true
  if (raw instanceof Uint8Array) return raw
  throw replyError('redis sync fold script', raw)
}

/**
 * Refuse a self-sized store whose own adoption lag D reaches a generation's whole life
 * (spec/cluster.md "Early growth", _The fleet's adoption lag_): with D ≥ N·periodMs its field
 * in the fleet lag record stands past the end of every generation live at each of its rounds, so
 * it proposes no twin itself and the shape script drops every other instance's twin fleet-wide
 * while it runs (no early growth at all). Checked on the policy's own period (a fleet's recorded
 * period adopted later is told by the `'fleet-lag'` event instead, {@link reportLagDrops}).
 * @param lagMs D in ms (exact mode 2·sizing.checkEveryMs + timeoutMs, sync mode syncMs + timeoutMs)
 * @param options the options D is made of, as the message names them (e.g. `"sizing.checkEveryMs" and "timeoutMs"`)
 * @param formula D's sum with its figures (e.g. `2 × 20000 + 500`)
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the options, D and N·periodMs (never a seed)
 * @internal
 */
export function checkAdoptionLag(
  lagMs: number,
  generations: number,
  periodMs: number,
  options: string,
  formula: string,
): void {
  const life = generations * periodMs
  if (lagMs < life) return
  throw new GrudgeError(
    'ERR_GRUDGE_OPTION_INVALID',
    `options ${options}: expected an adoption lag of a twin below generations × periodMs = ${generations} × ${periodMs} = ${life} ms (spec/cluster.md "Early growth": a longer one blocks every twin of the fleet while this instance runs), received ${formula} = ${lagMs} ms; lower them, or lengthen periodMs`,
  )
}

/** What a store remembers of the `'fleet-lag'` notice ({@link reportLagDrops}): whether it was told. @internal */
export interface LagNotice {
  reported: boolean
}

/**
 * Tell the store's listeners once (`notice` remembers) that a twin this instance proposed was
 * dropped for the fleet's adoption lag (spec/cluster.md "Early growth", _The fleet's adoption
 * lag_): another instance's field in the fleet lag record — an instance of another build or
 * options, whose D this one cannot refuse — moved its switch to or past its generation's end.
 * One `'fleet-lag'` event with figures: the lag of the field that blocked, how long it still
 * stands, the fleet's largest lag, N·periodMs and the switch against the generation's end.
 * Nothing when `lag` dropped nothing.
 * @param periodMs the period in use (the fleet's recorded one, when adopted)
 * @internal
 */
export function reportLagDrops(
  emit: (event: RedisStoreEvent) => void,
  notice: LagNotice,
  shape: FleetShape,
  policy: string,
  lag: FleetLagReply | undefined,
  periodMs: number,
): void {
  if (notice.reported || lag === undefined || lag.dropped.length === 0) return
  notice.reported = true
  const N = shape.generations
  const first = lag.dropped[0]
  const end = (first.id + 1) * periodMs
  const ids = lag.dropped.map((d) => d.id).join(', ')
  emit({
    type: 'fleet-lag',
    policy,
    fleetLagMs: lag.latestLagMs,
    message:
      `grudge: ${policy}: the early growth proposed here on a load jump was not recorded (twins of generation${lag.dropped.length > 1 ? 's' : ''} ${ids}): ` +
      `the fleet lag record ${lagKey(shape)} holds an instance's adoption lag of ${lag.latestLagMs} ms, standing ${lag.latestInMs} ms more ` +
      `(the fleet's largest lag ${lag.fleetLagMs} ms), which moves generation ${first.id}'s switch to ${first.switchAtMs - end} ms past its end; ` +
      `an adoption lag of generations × periodMs = ${N} × ${periodMs} = ${N * periodMs} ms or more blocks every twin of the fleet while that instance runs. ` +
      `Find the instance of lag ${lag.latestLagMs} ms (exact mode 2 × sizing.checkEveryMs + timeoutMs, sync mode syncMs + timeoutMs: another build or other options) and lower it (this notice is logged once)`,
  })
}
