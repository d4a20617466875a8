// The exact script as it was before the blocked layout (git 2626205, src/cluster/scripts.ts), kept
// only so `examples/bench/redis-time.ts` measures Redis time per decision before and after in the
// same run. Not used by grudge; not a second home of the rule (the store runs src/cluster/scripts.ts).

/**
 * The Lua scripts grudge runs inside Redis (normative in `spec/cluster.md`). Both share a
 * prologue: argument parsing, the clock (Redis `TIME`, or an explicit time for tests and
 * replays), the fingerprint and schedule check and the cell codec — one cell is 16 bytes,
 * the score then the last-touched time in ms, both little-endian float64, at byte offset
 * (level·M + index)·16 of its generation's string.
 *
 * Generations: the newest live id is G = max(floor(now / periodMs) + N − 1, the newest
 * seen), the oldest G − N + 1: a server clock that steps back keeps the generations it
 * already reached (no amnesty), as a Rotator never rotates backwards.
 *
 * The fingerprint key holds `<fingerprint>:<periodMs>:<newest G seen>`.
 *
 * Replies are arrays whose numbers travel as `%.17g` strings (Redis would truncate a Lua
 * number to an integer), which round-trip a float64 exactly.
 */

/**
 * The placement constants of a policy, as Lua literals in this order: fingerprint (quoted),
 * N, L, M, aggregator id, decay kind id. They are compiled into the script's text (one
 * script, one SHA per placement). The policy figures — periodMs, decay rate per ms, lo, hi —
 * are arguments (ARGV 2..5), so instances that differ in them during a rolling deploy run
 * the same script on the same cells, each with its own figures.
 */
export type ScriptConstants = readonly string[]

const prologue = (c: ScriptConstants) => `
local fp = ${c[0]}
local N = ${c[1]}
local L = ${c[2]}
local M = ${c[3]}
local agg = ${c[4]}
local decay = ${c[5]}
local period = tonumber(ARGV[2])
local rate = tonumber(ARGV[3])
local lo = tonumber(ARGV[4])
local hi = tonumber(ARGV[5])
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
else
  now = tonumber(ARGV[1])
end
local function fmt(x) return string.format('%.17g', x) end
local raw = redis.call('GET', KEYS[1])
local stored = false
local seenG = nil
if raw then
  local sfp, sp, sg = string.match(raw, '^(%x+):([^:]+):([^:]+)$')
  if sfp ~= fp then
    return {-1, raw, fmt(now), '0'}
  end
  if tonumber(sp) ~= period then
    -- another period is recorded: the caller adopts it and repeats (spec/cluster.md, Schedule)
    return {-3, sp, fmt(now), '0'}
  end
  stored = true
  seenG = tonumber(sg) or -1
end
-- generation ids: the newest is G, the oldest live one G − N + 1; never older than already seen
local G = math.floor(now / period) + N - 1
if seenG and seenG > G then G = seenG end
local function ttl(k)
  -- generation k is live until (k + 1)·periodMs; it expires one period later
  local ms = math.ceil((k + 2) * period - now)
  if ms < 1 then ms = 1 end
  return ms
end
-- the fingerprint record lives as long as the newest generation: written when absent or
-- when G moved forward (once per period), its expiry pushed when a generation is created
local function touchFp()
  if not stored or G > seenG then
    redis.call('SET', KEYS[1], fp .. ':' .. ARGV[2] .. ':' .. string.format('%d', G), 'PX', ttl(G))
    stored = true
    seenG = G
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
 * ARGV: 1 now in ms (empty: Redis `TIME`), 2 periodMs, 3 decay rate per ms, 4 lo, 5 hi (this
 * instance's policy figures), 6 op (0 tryConsume, 1 add, 2 read, 3 check), 7 delta, 8 limit,
 * 9 gb, 10 K, 11 the K×L cell indexes, generation-major, in decimal separated by commas.
 *
 * Reply: `{status, score, nowMs, G}` with status 1 admitted / applied / read, 0 denied,
 * −1 fingerprint mismatch (score = the stored record), −2 the live generations G−N+1..G are
 * not all among gb..gb+K−1 (the caller repeats with gb = G − N), −3 another period is
 * recorded (score = that period; the caller adopts it and repeats).
 */
export const legacyExactScript = (c: ScriptConstants): string =>
  prologue(c) +
  `
local op = tonumber(ARGV[6])
local delta = tonumber(ARGV[7])
local limit = tonumber(ARGV[8])
local gb = tonumber(ARGV[9])
local K = tonumber(ARGV[10])
local gs = fmt(G)
if op == 3 then
  touchFp()
  return {1, '0', fmt(now), gs}
end
local oldest = G - N + 1
if oldest < gb or G > gb + K - 1 then
  return {-2, '', fmt(now), gs}
end
local oj = oldest - gb
local okey = KEYS[2 + oj]
local X = {}
for v in string.gmatch(ARGV[11], '%d+') do X[#X + 1] = tonumber(v) end
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
  if op == 2 then return {1, fmt(acc), fmt(now), gs} end
  return {0, fmt(acc), fmt(now), gs}
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
return {1, fmt(acc), fmt(now), gs}
`
