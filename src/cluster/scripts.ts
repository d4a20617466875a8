import { createHash } from 'node:crypto'

/**
 * The Lua scripts grudge runs inside Redis (normative in `spec/cluster.md`). Both share a
 * prologue: argument parsing, the clock (Redis `TIME`, or an explicit time for tests and
 * replays), the fingerprint check and the cell codec — one cell is 16 bytes, the score
 * then the last-touched time in ms, both little-endian float64, at byte offset
 * (level·M + index)·16 of its generation's string.
 *
 * Generations: the oldest live id is O = floor(now / periodMs), the newest G = O + N − 1;
 * the live ones are G−N+1..G (= O..O+N−1), indexed as a Rotator aligned with
 * `rotateTo(floor(now / periodMs))` (spec/rotator.md).
 *
 * Replies are arrays whose numbers travel as `%.17g` strings (Redis would truncate a Lua
 * number to an integer), which round-trip a float64 exactly.
 */

/**
 * The constants of a policy, as Lua literals in this order: fingerprint (quoted), periodMs, N,
 * L, M, aggregator id, decay id, decay rate per ms, lo, hi. They are compiled into the
 * script's text (one script, one SHA per policy shape), so a call carries only what varies.
 */
export type ScriptConstants = readonly string[]

const prologue = (c: ScriptConstants) => `
local fp = ${c[0]}
local period = ${c[1]}
local N = ${c[2]}
local L = ${c[3]}
local M = ${c[4]}
local agg = ${c[5]}
local decay = ${c[6]}
local rate = ${c[7]}
local lo = ${c[8]}
local hi = ${c[9]}
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
else
  now = tonumber(ARGV[1])
end
local function fmt(x) return string.format('%.17g', x) end
local stored = redis.call('GET', KEYS[1])
if stored and stored ~= fp then
  return {-1, stored, fmt(now)}
end
-- generation ids: the oldest live one is floor(now / periodMs), the newest G = oldest + N − 1
local G = math.floor(now / period) + N - 1
local function ttl(k)
  -- generation k is live until (k + 1)·periodMs; it expires one period later
  local ms = math.ceil((k + 2) * period - now)
  if ms < 1 then ms = 1 end
  return ms
end
-- the fingerprint lives as long as the newest generation: stored when absent, its expiry
-- pushed forward when a generation is created (generations are created in id order)
local function touchFp()
  if not stored then
    redis.call('SET', KEYS[1], fp, 'PX', ttl(G))
    stored = fp
  end
end
local function decayed(s, t)
  if now > t then
    if s ~= 0 then
      local dt = now - t
      if decay == 1 then
        s = s * math.exp(-rate * dt)
      elseif decay == 2 then
        local step = rate * dt
        if s > 0 then
          if s > step then s = s - step else s = 0 end
        else
          if -s > step then s = s + step else s = 0 end
        end
      end
    end
    t = now
  end
  return s, t
end
local function loadCell(key, p, k)
  local raw = redis.call('GETRANGE', key, p * 16, p * 16 + 15)
  if #raw < 16 then
    -- a new generation: allocate all L×M cells at once (zeros), so the string never grows
    -- by SETRANGE's doubling and its memory is exactly L×M×16 bytes; it expires on its own
    redis.call('SETRANGE', key, L * M * 16 - 1, '\0')
    redis.call('PEXPIRE', key, ttl(k))
    touchFp()
    redis.call('PEXPIRE', KEYS[1], ttl(G))
    return 0, 0
  end
  local s, t = struct.unpack('<d<d', raw)
  return s, t
end
local function storeCell(key, p, s, t)
  redis.call('SETRANGE', key, p * 16, struct.pack('<d<d', s, t))
end
local function clamp(s)
  if s < lo then return lo elseif s > hi then return hi end
  return s
end
`

/**
 * Exact mode: one decision per call.
 *
 * KEYS: [1] the fingerprint key, [2..K+1] the keys of generations gb..gb+K−1.
 * ARGV: 1 now in ms (empty: Redis `TIME`), 2 op (0 tryConsume, 1 add, 2 read, 3 check),
 * 3 delta, 4 limit, 5 gb, 6 K, 7 the K×L cell indexes, generation-major, in decimal
 * separated by commas.
 *
 * Reply: `{status, score, nowMs}` with status 1 admitted / applied / read, 0 denied,
 * −1 fingerprint mismatch (score = the stored fingerprint), −2 the live generations
 * G−N+1..G are not all among gb..gb+K−1 (the caller's time estimate is off: retry with
 * the returned time).
 */
export const exactScript = (c: ScriptConstants): string =>
  prologue(c) +
  `
local op = tonumber(ARGV[2])
local delta = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local gb = tonumber(ARGV[5])
local K = tonumber(ARGV[6])
if op == 3 then
  touchFp()
  return {1, '0', fmt(now)}
end
local oldest = G - N + 1
if oldest < gb or G > gb + K - 1 then
  return {-2, '', fmt(now)}
end
local oj = oldest - gb
local okey = KEYS[2 + oj]
local X = {}
for v in string.gmatch(ARGV[7], '%d+') do X[#X + 1] = tonumber(v) end
local S = {}
local T = {}
local P = {}
local D = {}
local acc
if agg == 0 then acc = math.huge elseif agg == 1 then acc = -math.huge else acc = 0 end
for i = 1, L do
  local p = (i - 1) * M + X[oj * L + i]
  local s0, t0 = loadCell(okey, p, oldest)
  local s, t = decayed(s0, t0)
  S[i] = s
  T[i] = t
  P[i] = p
  D[i] = t ~= t0 or s ~= s0
  if agg == 0 then
    if s < acc then acc = s end
  elseif agg == 1 then
    if s > acc then acc = s end
  else
    acc = acc + s
  end
end
if agg == 2 then acc = acc / L end
if op == 2 or (op == 0 and acc + delta > limit) then
  -- a read or a denial: the decayed cells are written back (as the Sketch does), nothing added
  for i = 1, L do
    if D[i] then storeCell(okey, P[i], S[i], T[i]) end
  end
  touchFp()
  if op == 2 then return {1, fmt(acc), fmt(now)} end
  return {0, fmt(acc), fmt(now)}
end
if agg == 0 then acc = math.huge elseif agg == 1 then acc = -math.huge else acc = 0 end
for i = 1, L do
  local s = clamp(S[i] + delta)
  storeCell(okey, P[i], s, T[i])
  if agg == 0 then
    if s < acc then acc = s end
  elseif agg == 1 then
    if s > acc then acc = s end
  else
    acc = acc + s
  end
end
if agg == 2 then acc = acc / L end
for k = oldest + 1, G do
  local j = k - gb
  local key = KEYS[2 + j]
  for i = 1, L do
    local p = (i - 1) * M + X[j * L + i]
    local s, t = decayed(loadCell(key, p, k))
    local v = s + delta
    -- carry-forward (spec/rotator.md): with linear decay a younger generation never reads a
    -- key lower than the oldest did after this write, so a key held at its limit gets no burst
    -- back when the oldest generation retires
    if decay == 2 and delta >= 0 and v < acc then v = acc end
    storeCell(key, p, clamp(v), t)
  end
end
touchFp()
return {1, fmt(acc), fmt(now)}
`

/**
 * Sync mode: merge one instance's accumulated deltas and return the fleet's cells.
 *
 * KEYS: [1] the fingerprint key, [2..K+1] the keys of generations gb..gb+K−1.
 * ARGV: 1 now as in {@link exactScript}, 2 gb, 3 K, then per generation j in 0..K−1 one
 * binary string of 12-byte records: cell position p = level·M + index (u32 LE) and the
 * delta (float64 LE); empty when nothing was added.
 *
 * Each delta is added to its cell after the cell is decayed to now, clamped to [lo, hi],
 * exactly as `Sketch.update` does cell by cell; deltas for generations that are no longer
 * live (below G−N+1) are dropped. Reply: `{status, nowMs, G, v_0, …, v_{K−1}}` where v_j is
 * the raw string of generation gb+j when it is live (G−N+1 ≤ gb+j ≤ G) and exists, else
 * empty; status −1 is a fingerprint mismatch as in exact mode.
 */
export const syncScript = (c: ScriptConstants): string =>
  prologue(c) +
  `
local gb = tonumber(ARGV[2])
local K = tonumber(ARGV[3])
local oldest = G - N + 1
for j = 0, K - 1 do
  local blob = ARGV[4 + j]
  local k = gb + j
  if #blob > 0 and k >= oldest then
    local key = KEYS[2 + j]
    for off = 1, #blob, 12 do
      local p, d = struct.unpack('<I4<d', blob, off)
      local s, t = decayed(loadCell(key, p, k))
      storeCell(key, p, clamp(s + d), t)
    end
  end
end
touchFp()
local out = {1, fmt(now), fmt(G)}
for j = 0, K - 1 do
  local k = gb + j
  local v = false
  if k >= oldest and k <= G then v = redis.call('GET', KEYS[2 + j]) end
  if v then out[#out + 1] = v else out[#out + 1] = '' end
end
return out
`

/** SHA-1 of a script in hex: the name `EVALSHA` knows it by. */
export function scriptSha(source: string): string {
  return createHash('sha1').update(source).digest('hex')
}
