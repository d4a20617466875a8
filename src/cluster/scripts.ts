import { createHash } from 'node:crypto'

/**
 * The Lua scripts grudge runs inside Redis (normative in `spec/cluster.md`). Both share a
 * prologue: argument parsing, the clock (Redis `TIME`, or an explicit time for tests and
 * replays), the fingerprint and schedule check (exact mode: on the caller's checks and new
 * generations only, {@link exactHeader}) and the cell codec — one cell is 16 bytes,
 * the score then the last-touched time in ms, both little-endian float64. Sync mode keeps the
 * Sketch's level-major layout (cell at byte offset (level·M + index)·16 of its generation's
 * string); exact mode the blocked layout: a key's L cells of a generation lie in one block of
 * L·W cells, cell (block b, level i, offset j) at byte offset ((b·L + i)·W + j)·16, so a
 * generation costs one GETRANGE and one SETRANGE per decision (spec/cluster.md, "Storage layout").
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
 * N, L, M, aggregator id, decay kind id, W (cells per level per block), B (blocks; exact mode). They are compiled into the script's text (one
 * script, one SHA per placement). The policy figures — periodMs, decay rate per ms, lo, hi —
 * are arguments (ARGV 2..5), so instances that differ in them during a rolling deploy run
 * the same script on the same cells, each with its own figures.
 */
export type ScriptConstants = readonly string[]

/** The compiled constants, the policy figures and the clock (Redis `TIME`, or ARGV[1]): the start of both the sync and the exact script. */
const opening = (c: ScriptConstants) => `
local fp = ${c[0]}
local N = ${c[1]}
local L = ${c[2]}
local M = ${c[3]}
local agg = ${c[4]}
local decay = ${c[5]}
local W = ${c[6]}
local B = ${c[7]}
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
`

/**
 * What every cell script starts with: the placement constants, this instance's figures, the
 * clock, the fingerprint and schedule check, and the generation ids (G, the newest seen).
 */
/**
 * Lua: refuse a fingerprint record (`raw`, "fp:period:generation") of another fingerprint (-1)
 * or another period (-3), leaving `sg` (the recorded generation) in scope; one home for the
 * sync header and the exact script's per-slot check, `indent` before every line.
 */
const recordCheck = (indent: string) =>
  [
    `local sfp, sp, sg = string.match(raw, '^(%x+):([^:]+):([^:]+)$')`,
    'if sfp ~= fp then',
    `  return {-1, raw, string.format('%.17g', now), '0'}`,
    'end',
    'if tonumber(sp) ~= period then',
    '  -- another period is recorded: the caller adopts it and repeats (spec/cluster.md, Schedule)',
    `  return {-3, sp, string.format('%.17g', now), '0'}`,
    'end',
  ]
    .map((line) => indent + line)
    .join('\n')

const header = (c: ScriptConstants) => `${opening(c)}local raw = redis.call('GET', KEYS[1])
local stored = false
local seenG = nil
if raw then
${recordCheck('  ')}
  stored = true
  seenG = tonumber(sg) or -1
end
-- generation ids: the newest is G, the oldest live one G − N + 1; never older than already seen
local G = math.floor(now / period) + N - 1
if seenG and seenG > G then G = seenG end
`

/**
 * The exact scripts' prologue (spec/cluster.md, "The exact script" and "The record check"):
 * the opening, then the generation ids and the fingerprint records of the call's Q slots
 * (groups of KEYS: group q's record at KEYS[1 + q·(K + 1)], its generation keys after it). A
 * group's floor (ARGV[8 + q]) is the caller's, the newest generation id a reply named to it, or
 * empty. G is the newest of the time's, the floors and the records read. A group's record is
 * read when its floor is empty (the caller's first call to that slot, one at least every
 * `RECORD_CHECK_MS` of its clock (exact-store.ts), and ready()) or below G (a generation the
 * caller has not seen: once per period and caller), and checked as in sync mode; otherwise the
 * script trusts the caller's last check and skips the GET and its parsing (about 1.2 µs of
 * Redis CPU per slot, measured). `rec[q]`: true (trusted), false (to be written: absent, or
 * a generation of the slot created by this call) or the record's newest generation id.
 */
const exactHeader = (c: ScriptConstants) => `${opening(c)}local gb = tonumber(ARGV[6])
local Q = tonumber(ARGV[7])
local K = N + 1
-- generation ids: the newest is G, the oldest live one G − N + 1; never older than already seen
-- (by the fleet, in a record, or by this caller, its floor)
local G = math.floor(now / period) + N - 1
local rec = {}
for q = 1, Q do
  local f = tonumber(ARGV[7 + q])
  if f and f > G then G = f end
  rec[q] = f or false
end
for q = 1, Q do
  local f = rec[q]
  if f == false or G > f then
    local raw = redis.call('GET', KEYS[1 + (q - 1) * (K + 1)])
    rec[q] = false
    if raw then
${recordCheck('      ')}
      local g = tonumber(sg) or -1
      rec[q] = g
      if g > G then G = g end
    end
  else
    rec[q] = true
  end
end
`

/**
 * The exact scripts' epilogue: each group's record written when it must be (absent, behind G
 * after a read, or a generation created), living as long as the newest generation.
 */
const exactRecords = `for q = 1, Q do
  local r = rec[q]
  if r == false or (r ~= true and G > r) then
    local ms = math.ceil((G + 2) * period - now)
    if ms < 1 then ms = 1 end
    redis.call('SET', KEYS[1 + (q - 1) * (K + 1)], fp .. ':' .. ARGV[2] .. ':' .. string.format('%d', G), 'PX', ms)
  end
end`

/** The sync script's helpers (the exact script inlines its own: see {@link exactScript}). */
const helpers = `
local function fmt(x) return string.format('%.17g', x) end
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
local function loadCell(key, p, k, m)
  local raw = redis.call('GETRANGE', key, p * 16, p * 16 + 15)
  if #raw < 16 then
    -- a new generation: allocate all L×m cells at once (zeros), so the string never grows
    -- by SETRANGE's doubling and its memory is exactly L×m×16 bytes; it expires on its own
    redis.call('SETRANGE', key, L * m * 16 - 1, '\0')
    redis.call('PEXPIRE', key, ttl(k))
    touchFp()
    redis.call('PEXPIRE', KEYS[1], ttl(G))
    -- the third value: the string was created (or grown) here
    return 0, 0, true
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

const prologue = (c: ScriptConstants) => header(c) + helpers

/**
 * Exact mode: D ≥ 0 decisions per call (a batch: the requests one process issued in one
 * event-loop turn), decided one after the other, on the blocked layout, over Q ≥ 1 slots.
 *
 * KEYS: per group (slot) q in 0..Q−1, K + 1 keys: [1 + q·(K+1)] the slot's fingerprint key,
 * then the keys of its generations gb..gb+K−1, K = N + 1.
 * ARGV: 1 now in ms (empty: Redis `TIME`), 2 periodMs, 3 decay rate per ms, 4 lo, 5 hi (this
 * instance's policy figures), 6 gb, 7 Q, 8..7+Q each group's floor (the newest generation id a
 * reply named to the caller; empty: read and check the slot's fingerprint record, see
 * {@link exactHeader}); sized, each generation's W_j then its B_j (below); then per decision
 * 3 + K arguments: op + 4·q (op 0 tryConsume, 1 add, 2 read; q its group), delta, limit, then
 * per generation j in 0..K−1 one argument: the key's L offsets o_i in its block b
 * (`blockedIndexes`) as L characters, offset o as the character of code 97 + o (`a`…`p`;
 * W ≤ 16), followed by the byte offset of its first cell in the generation's string,
 * (b·L·W + o_0)·16, in decimal (text the script passes on to GETRANGE and SETRANGE as is), so
 * the script parses no list. D = 0 is a check: the records read, checked and written only.
 *
 * Per decision and generation touched: one GETRANGE and, when a cell changed, one SETRANGE of
 * the span from the key's first cell in its block to its last (the other keys' cells in
 * between written back as read: the script is atomic; the looped form reads the whole block of
 * L·W·16 bytes). A decision sees the cells as the decisions before it in the call left them:
 * the same as the same requests one after the other at the call's time.
 *
 * Reply: integers only, `{status, scoreLo, scoreHi, nowMs, G}` for the first decision (a check:
 * status 1, score 0), then `status, scoreLo, scoreHi` for each next one — the score's float64
 * as its two little-endian 32-bit words (signed), the server time truncated to whole ms (the
 * caller only estimates generation ids from it), the newest live generation id: no number is
 * formatted as text (`%.17g` cost about 1 µs each inside Redis, spec/cluster.md "Redis work
 * per decision"). Status 1 admitted / applied / read, 0 denied; for the whole call, −2 the live
 * generations G−N+1..G are not all among gb..gb+K−1 (`{-2, 0, 0, now, G}`: the caller repeats
 * with gb = G − N). The prologue's −1 (a fingerprint mismatch in any group: `{-1, stored
 * record, now, '0'}`) and −3 (another period is recorded: `{-3, period, now, '0'}`) keep their
 * text fields; nothing is decided then.
 *
 * The sized variant (`sized`: a self-sized policy, spec/cluster.md "Shapes" and "Early growth")
 * takes after the floors T (8 + Q; `NT` in the script), the number of twins in the call (0..K),
 * then for each of the K + T window entries j (0..K−1 the generations gb + j, K + t twin t) its
 * W_j (9 + Q + j), then its B_j (9 + Q + K + T + j), then per twin t its base's window index
 * (9 + Q + 2(K + T) + 3t), its switch time in server ms and its kind (`1` a folding twin, `0`
 * a written-beside one), all in decimal;
 * each decision has K + T span arguments (the twins' last), and twin t of group q is
 * KEYS[Q·(K + 1) + q·T + t + 1]
 * (after every group). Entry j's slot strings are B_j blocks of L·W_j·16 bytes (its recorded
 * M, `blockShape(ceil(M / S))`), read, written and created at that size; the compiled W and B
 * (the largest shape's) are not used. The oldest generation's twin decides in its base's place
 * once `now ≥` its switch time (the base is then no longer written). A written-beside twin
 * (kind 0) is written after the younger generations as one of them, with the same carried
 * floor, from its start. A folding twin (kind 1, spec/cluster.md "Early growth": its W equal to
 * its base's and its B a multiple of the base's) is neither read nor written before its switch;
 * from then on it replaces its base everywhere (deciding, or written as the younger generation
 * in the base's place, the base no longer written). Its slot string is its base's repeated
 * B_twin / B_base times (the fold: a key's block in the twin, hashHi mod B_twin, reduces mod
 * B_base to its block in the base, and its offsets in a block are the same, so every key reads
 * there what it read in the base; zeros where the base's string is absent), built
 * incrementally: a call that reaches a twin string short of a key's span makes a fold step
 * there, at most `FOLD_CHUNK_BYTES` appended per call in all, and a span still past the
 * string's length is read and written at the same offsets in the base (byte at mod the base's
 * length), so a call's fold work is bounded and no key reads differently across a step.
 */
/** The sized scripts' twin count NT, window entries and where their W (wb + j) and B (wb + KT + j) are. */
const SIZED_PROLOGUE = `local NT = tonumber(ARGV[8 + Q])
local KT = K + NT
local wb = 9 + Q
-- per twin t: its base's window index, its switch time, whether it folds (1) or is written beside (0)
local twj, tws, twf = {}, {}, {}
for t = 0, NT - 1 do
  twj[t] = tonumber(ARGV[wb + 2 * KT + 3 * t])
  tws[t] = tonumber(ARGV[wb + 2 * KT + 3 * t + 1])
  twf[t] = ARGV[wb + 2 * KT + 3 * t + 2] == '1'
end
`
/** The sized looped script's block(): generation j's W, B and block bytes BB, shadowing the compiled ones. */
const SIZED_BLOCK = `  local W = tonumber(ARGV[wb + j])
  local B = tonumber(ARGV[wb + KT + j])
  local BB = L * W * 16
`

/** The sized unrolled script's read of generation `j`'s W, B and block bytes BB (locals of the block's scope). */
const sizedBlock = (j: string, L: number) => `local W = tonumber(ARGV[wb + ${j}])
local B = tonumber(ARGV[wb + KT + ${j}])
local BB = ${L * 16} * W
`

/**
 * The sized scripts' per-call plan (all decisions of a call share now and the oldest): dtw, the
 * twin deciding in the oldest's place (−1: its base decides), and the entries written after the
 * deciding one, in order: the younger generations' bases (but those a folding twin replaces
 * from its switch), then every live twin but the deciding one (a folding twin from its switch
 * only) (wj: window entry, wk: generation id, for the expiry).
 */
const SIZED_WINDOW = `local dtw = -1
-- the bases a folding twin replaces from its switch on (by window index)
local rep = {}
for t = 0, NT - 1 do
  if now >= tws[t] then
    if twj[t] == oj then dtw = t end
    if twf[t] then rep[twj[t]] = true end
  end
end
local wj, wk = {}, {}
local NW = 0
for j = oj + 1, G - gb do
  if not rep[j] then
    NW = NW + 1
    wj[NW] = j
    wk[NW] = gb + j
  end
end
for t = 0, NT - 1 do
  if t ~= dtw and twj[t] >= oj and twj[t] <= G - gb and (not twf[t] or now >= tws[t]) then
    NW = NW + 1
    wj[NW] = K + t
    wk[NW] = gb + twj[t]
  end
end
`

/**
 * The most bytes one call of the sized exact script copies from bases into their folding twins
 * (65,536: 64 KiB in all, whole blocks of L·W·16 bytes, at least one block), in one fold step
 * or a few (small slot strings), so no call's fold work grows with the twins: the first batch
 * after a switch once folded every slot string it touched in one call, 7.5 MiB in 46–81 ms of
 * Redis time for 4 levels × 65,536 cells over 16 slots (past a 50 ms timeoutMs in 2 of 4 runs),
 * 100–172 ms over one slot (examples/bench/fold-batch-cost.ts; spec/cluster.md "Early growth",
 * _The incremental fold_).
 */
export const FOLD_CHUNK_BYTES = 65536

/**
 * Sized: the incremental fold (spec/cluster.md "Early growth", _The incremental fold_). A
 * folding twin's slot string tkey (full length tlen) is its base's bkey (full length blen)
 * repeated, built from its start: its length F, a multiple of the block bytes BB, is the
 * progress (twin byte p < F holds what was base byte p mod blen when it was copied; APPEND
 * keeps its expiry). foldStep makes the call's one step — the next min(FOLD_CHUNK_BYTES in
 * whole blocks, tlen − F) bytes appended (a base larger than that: to the end of its
 * repetition at most, so one step reads and writes at most FOLD_CHUNK_BYTES), an absent base
 * read as zeros, the twin created by the first step (SET … PX, its group's record q to be
 * written) — while the call's budget foldLeft (FOLD_CHUNK_BYTES in all) holds a whole block
 * (one block when a block alone is larger), and returns F after it. A key whose span lies below F is
 * read and written in the twin, any other at the same offsets in its base (byte at mod blen).
 */
const SIZED_FOLD = `local foldLeft = ${FOLD_CHUNK_BYTES}
local function foldStep(tkey, bkey, tlen, blen, BB, k, q)
  local F = redis.call('STRLEN', tkey)
  if F >= tlen then return F end
  local n = math.floor(foldLeft / BB) * BB
  if n < BB then
    -- a block larger than the whole budget: one block, as the call's only step
    if foldLeft < ${FOLD_CHUNK_BYTES} then return F end
    n = BB
  end
  if n > tlen - F then n = tlen - F end
  local x = F % blen
  local m = blen - x
  local c
  if n > m and blen <= n then
    -- a base no larger than the step: read whole, the step is its bytes from x on, repeated
    c = redis.call('GET', bkey) or ''
    if #c < blen then c = c .. string.rep('\\0', blen - #c) end
    c = string.sub(c, x + 1) .. string.rep(c, math.floor((n - m) / blen)) .. string.sub(c, 1, (n - m) % blen)
  else
    -- else the step ends at the end of the base's repetition at most
    if n > m then n = m end
    c = redis.call('GETRANGE', bkey, x, x + n - 1)
    if #c < n then c = c .. string.rep('\\0', n - #c) end
  end
  foldLeft = foldLeft - n
  if F == 0 then
    local ms = math.ceil((k + 2) * period - now)
    if ms < 1 then ms = 1 end
    redis.call('SET', tkey, c, 'PX', ms)
    rec[q] = false
  else
    redis.call('APPEND', tkey, c)
  end
  return F + n
end
`

/** Sized: the deciding entry, okey and its window entry oa (the oldest's base, or its twin from its switch on). */
const SIZED_DECIDER = `local oa = oj
if dtw >= 0 then
  okey = KEYS[Q * (K + 1) + gq * NT + dtw + 1]
  oa = K + dtw
end
`

/** Sized: the head of the loop over the written entries (window entry j, generation k, its key). */
const SIZED_WRITES = `for w = 1, NW do
local j = wj[w]
local k = wk[w]
local key
if j < K then key = KEYS[kb + 1 + j] else key = KEYS[Q * (K + 1) + gq * NT + j - K + 1] end
`

/** The decision loop's start, shared by both forms: decision d's op, group (its KEYS from kb + 1), delta, limit, span arguments from ARGV[ai]. */
const decisionLoop = (sized: boolean) => `local p0 = ${sized ? 'wb + 2 * KT + 3 * NT' : '8 + Q'}
local D = (#ARGV - p0 + 1) / (3 + ${sized ? 'KT' : 'K'})
local oldest = G - N + 1
if D > 0 and (oldest < gb or G > gb + K - 1) then
  return {-2, 0, 0, now, G}
end
local oj = oldest - gb
${sized ? SIZED_WINDOW : ''}-- the reply: the first decision's status and score words in slots 1..3 (4 and 5 are now and
-- G), each next one's in the next three
local out = {1, 0, 0, now, G}
local ro = 1
for d = 1, D do
local oi = p0 + (d - 1) * (3 + ${sized ? 'KT' : 'K'})
local ai = oi + 3
local x = tonumber(ARGV[oi])
local gq = math.floor(x / 4)
local op = x - 4 * gq
local kb = gq * (K + 1) + 1
local delta = tonumber(ARGV[oi + 1])
`

/**
 * The exact script in its looped form: helper functions, tables and loops over the levels,
 * for any L (used above {@link UNROLLED_MAX_LEVELS}; bench:redis-time compares it with the
 * unrolled form). Exported for the bench and tests.
 * @internal
 */
export const loopedExactScript = (c: ScriptConstants, sized = false): string =>
  exactHeader(c) +
  (sized ? SIZED_PROLOGUE + SIZED_FOLD : '') +
  helpers +
  `${sized ? 'local kb = 1\n' : 'local BB = L * W * 16\n'}local ai = 0
-- the key's block in generation k (key name) for window index j: its bytes, the block's byte
-- offset and the byte offset in the block of each level's cell (increasing with the level);
-- a new generation marks its group's record to be written (q: 1-based)
local function block(key, j, k, q)
  local a = ARGV[ai + j]
${sized ? SIZED_BLOCK : ''}  local O = {string.byte(a, 1, L)}
  for i = 1, L do O[i] = ((i - 1) * W + O[i] - 97) * 16 end
  local base = tonumber(string.sub(a, L + 1)) - O[1]
  local raw = redis.call('GETRANGE', key, base, base + BB - 1)
  if #raw < BB then
${
  sized
    ? `    if j >= K and twf[j - K] then
    -- a folding twin after its switch, its string short of this block: one fold step (once
    -- per call), then the block from the twin if folded, else from its base (SIZED_FOLD)
    local bj = twj[j - K]
    local bkey = KEYS[kb + 1 + bj]
    local blen = BB * tonumber(ARGV[wb + KT + bj])
    if foldStep(key, bkey, B * BB, blen, BB, k, q) > base then
      raw = redis.call('GETRANGE', key, base, base + BB - 1)
    else
      key = bkey
      base = base % blen
      raw = redis.call('GETRANGE', key, base, base + BB - 1)
      if #raw < BB then
        redis.call('SETRANGE', key, blen - 1, '\\0')
        redis.call('PEXPIRE', key, ttl(k))
        rec[q] = false
        raw = string.rep('\\0', BB)
      end
    end
    else
`
    : ''
}    -- a new generation: allocate all B blocks at once (zeros), so the string never grows by
    -- SETRANGE's doubling and its memory is exactly B·L·W·16 bytes; it expires on its own
    redis.call('SETRANGE', key, B * BB - 1, '\0')
    redis.call('PEXPIRE', key, ttl(k))
    rec[q] = false
    raw = string.rep('\0', BB)
${sized ? '    end\n' : ''}  end
  return raw, base, O, key
end
-- one SETRANGE from the key's first cell to its last, the cells between as read
local function store(key, raw, base, O, S, T)
  local parts = {}
  local pos = O[1]
  local n = 0
  for i = 1, L do
    local o = O[i]
    if o > pos then n = n + 1 parts[n] = string.sub(raw, pos + 1, o) end
    n = n + 1
    parts[n] = struct.pack('<d<d', S[i], T[i])
    pos = o + 16
  end
  redis.call('SETRANGE', key, base + O[1], table.concat(parts))
end
${decisionLoop(sized)
  .replace('local ai = oi + 3', 'ai = oi + 3')
  .replace('local kb = ', sized ? 'kb = ' : 'local kb = ')}local function put(status, v)
  local lo32, hi32 = struct.unpack('<i4<i4', struct.pack('<d', v))
  out[ro] = status
  out[ro + 1] = lo32
  out[ro + 2] = hi32
  if ro == 1 then ro = 6 else ro = ro + 3 end
end
local okey = KEYS[kb + 1 + oj]
${sized ? SIZED_DECIDER : ''}local raw, base, O, dkey = block(okey, ${sized ? 'oa' : 'oj'}, oldest, gq + 1)
local S = {}
local T = {}
local changed = false
local acc
if agg == 0 then acc = math.huge elseif agg == 1 then acc = -math.huge else acc = 0 end
for i = 1, L do
  local s0, t0 = struct.unpack('<d<d', raw, O[i] + 1)
  local s, t = decayed(s0, t0)
  S[i] = s
  T[i] = t
  if t ~= t0 or s ~= s0 then changed = true end
  if agg == 0 then
    if s < acc then acc = s end
  elseif agg == 1 then
    if s > acc then acc = s end
  else
    acc = acc + s
  end
end
if agg == 2 then acc = acc / L end
if op == 2 or (op == 0 and acc + delta > tonumber(ARGV[oi + 2])) then
  -- a read or a denial: the decayed cells are written back (as the Sketch does), nothing added
  if changed then store(dkey, raw, base, O, S, T) end
  if op == 2 then put(1, acc) else put(0, acc) end
else
if agg == 0 then acc = math.huge elseif agg == 1 then acc = -math.huge else acc = 0 end
for i = 1, L do
  local s = clamp(S[i] + delta)
  S[i] = s
  if agg == 0 then
    if s < acc then acc = s end
  elseif agg == 1 then
    if s > acc then acc = s end
  else
    acc = acc + s
  end
end
store(dkey, raw, base, O, S, T)
if agg == 2 then acc = acc / L end
${
  sized
    ? SIZED_WRITES
    : `for k = oldest + 1, G do
  local j = k - gb
  local key = KEYS[kb + 1 + j]
`
}  local yraw, ybase, YO, ykey = block(key, j, k, gq + 1)
  for i = 1, L do
    local s, t = decayed(struct.unpack('<d<d', yraw, YO[i] + 1))
    local v = s + delta
    -- carry-forward (spec/rotator.md): with linear decay a younger generation never reads a
    -- key lower than the oldest did after this write, so a key held at its limit gets no burst
    -- back when the oldest generation retires
    if decay == 2 and delta >= 0 and v < acc then v = acc end
    S[i] = clamp(v)
    T[i] = t
  end
  store(ykey, yraw, ybase, YO, S, T)
end
put(1, acc)
end
end
${exactRecords}
return out
`

/**
 * The most levels for which the exact script is generated unrolled (one Lua local per cell,
 * no closure, table or loop per call); more levels run the looped form, which does the same
 * with per-call helper functions and tables.
 */
export const UNROLLED_MAX_LEVELS = 16

/**
 * Exact mode: the script for a placement (see {@link loopedExactScript} for its KEYS, ARGV,
 * reply and storage; both forms decide and store the same, bit for bit). Up to
 * {@link UNROLLED_MAX_LEVELS} levels it is generated unrolled for the placement's L, decay
 * kind and aggregator: each cell a pair of Lua locals, the decay and the aggregate written
 * out, the span written back with one concatenation. In Redis that took the script from about
 * 60 to about 40 µs per admitted decision against the looped form (spec/cluster.md, "Redis work
 * per decision"): per-call closures, tables and loop steps were most of the Lua time.
 */
export const exactScript = (c: ScriptConstants, sized = false): string => {
  const L = Number(c[2])
  return L <= UNROLLED_MAX_LEVELS ? unrolledExactScript(c, sized) : loopedExactScript(c, sized)
}

function unrolledExactScript(c: ScriptConstants, sized: boolean): string {
  const L = Number(c[2])
  const agg = Number(c[4])
  const decay = Number(c[5])
  const W = Number(c[6])
  const BB = L * W * 16
  const levels = Array.from({ length: L }, (_, i) => i + 1)
  const list = (f: (i: number) => string, sep = ', ') => levels.map(f).join(sep)
  // cell i's decay to now, as Sketch.decayCell (stamped only when now is past it)
  const decayCell = (i: number, mark: string) => {
    const body =
      decay === 1
        ? `if s${i} ~= 0 then s${i} = s${i} * math.exp(-rate * (now - t${i})) end`
        : decay === 2
          ? `if s${i} ~= 0 then
    local st = rate * (now - t${i})
    if s${i} > 0 then
      if s${i} > st then s${i} = s${i} - st else s${i} = 0 end
    else
      if -s${i} > st then s${i} = s${i} + st else s${i} = 0 end
    end
  end`
          : ''
    return `if now > t${i} then
  ${body}
  t${i} = now${mark}
end`
  }
  const aggregate = () =>
    agg === 0
      ? `acc = s1\n${levels
          .slice(1)
          .map((i) => `if s${i} < acc then acc = s${i} end`)
          .join('\n')}`
      : agg === 1
        ? `acc = s1\n${levels
            .slice(1)
            .map((i) => `if s${i} > acc then acc = s${i} end`)
            .join('\n')}`
        : `acc = (0 + ${list((i) => `s${i}`, ' + ')}) / L`
  const clampCell = (i: number) => `if s${i} < lo then s${i} = lo elseif s${i} > hi then s${i} = hi end`
  // read generation k's span for window index j: the bytes from the key's first cell to its
  // last (not the whole block: fewer bytes copied through the reply), into the locals s_i,
  // t_i, with o_i the 1-based position of cell i in the span (cell 1 at 1); ats, the span's
  // byte offset in the string, arrives as decimal text and is passed as such to GETRANGE and
  // SETRANGE (Redis formats every Lua number argument with %.17g); a missing generation is
  // created at its full size first (sized: the generation's W and B are arguments, its block
  // bytes BB a local)
  const bb = sized ? 'BB' : String(BB)
  const step = (i: number) => (sized ? `${i - 1} * W` : String((i - 1) * W))
  const last = L === 1 ? '1' : `o${L}` // the last cell's position in the span
  const readBlock = (key: string, j: string, k: string) => `local a = ARGV[ai + ${j}]
${sized ? sizedBlock(j, L) : ''}local ${list((i) => `o${i}`)} = string.byte(a, 1, ${L})
${levels
  .slice(1)
  .map((i) => `o${i} = (o${i} - o1 + ${step(i)}) * 16 + 1`)
  .join('\n')}
local ats = string.sub(a, ${L + 1})
local at = tonumber(ats)
local blk = redis.call('GETRANGE', ${key}, ats, at + ${last} + 14)
if #blk < ${last} + 15 then
${
  sized
    ? `  if ${j} >= K and twf[${j} - K] then
  -- a folding twin after its switch, its string short of this span: one fold step (once per
  -- call), then the span from the twin if folded (F > at: F is whole blocks, a span lies in
  -- one), else at the same offsets in its base, byte at mod blen (SIZED_FOLD)
  local bj = twj[${j} - K]
  local bkey = KEYS[kb + 1 + bj]
  local blen = BB * tonumber(ARGV[wb + KT + bj])
  if foldStep(${key}, bkey, B * BB, blen, BB, ${k}, gq + 1) > at then
    blk = redis.call('GETRANGE', ${key}, ats, at + ${last} + 14)
  else
    ${key} = bkey
    at = at % blen
    ats = string.format('%d', at)
    blk = redis.call('GETRANGE', bkey, ats, at + ${last} + 14)
    if #blk < ${last} + 15 then
      redis.call('SETRANGE', bkey, blen - 1, '\\0')
      local ms = math.ceil((${k} + 2) * period - now)
      if ms < 1 then ms = 1 end
      redis.call('PEXPIRE', bkey, ms)
      rec[gq + 1] = false
      blk = string.rep('\\0', ${last} + 15)
    end
  end
  else
`
    : ''
}  -- a new generation: allocate all B blocks at once (zeros), so the string never grows by
  -- SETRANGE's doubling and its memory is exactly B·L·W·16 bytes; it expires on its own
  redis.call('SETRANGE', ${key}, B * ${bb} - 1, '\\0')
  local ms = math.ceil((${k} + 2) * period - now)
  if ms < 1 then ms = 1 end
  redis.call('PEXPIRE', ${key}, ms)
  rec[gq + 1] = false
  blk = string.rep('\\0', ${last} + 15)
${sized ? '  end\n' : ''}end
local ${list((i) => `s${i}, t${i}`)}
${list((i) => `s${i}, t${i} = struct.unpack('<d<d', blk, ${i === 1 ? '1' : `o${i}`})`, '\n')}`
  // the span from the key's first cell to its last, the other keys' cells between as read
  const span = () =>
    levels
      .map(
        (i) =>
          (i === 1 ? '' : `string.sub(blk, ${i === 2 ? '17' : `o${i - 1} + 16`}, o${i} - 1) .. `) +
          `struct.pack('<d<d', s${i}, t${i})`,
      )
      .join(' .. ')
  // a decision's outcome into the reply (inlined: a local function would be a closure created
  // per call): its status and the score as its float64's two int32 words
  const put = (status: string, x: string) => `local lo32, hi32 = struct.unpack('<i4<i4', struct.pack('<d', ${x}))
out[ro] = ${status}
out[ro + 1] = lo32
out[ro + 2] = hi32`
  return (
    exactHeader(c) +
    (sized ? SIZED_PROLOGUE + SIZED_FOLD : '') +
    decisionLoop(sized) +
    `local okey = KEYS[kb + 1 + oj]
${sized ? SIZED_DECIDER : ''}repeat
local acc
local changed = false
do
${readBlock('okey', sized ? 'oa' : 'oj', 'oldest')}
${list((i) => decayCell(i, '\n  changed = true'), '\n')}
${aggregate()}
if op == 2 or (op == 0 and acc + delta > tonumber(ARGV[oi + 2])) then
  -- a read or a denial: the decayed cells are written back (as the Sketch does), nothing added
  if changed then redis.call('SETRANGE', okey, ats, ${span()}) end
  if op == 2 then
${put('1', 'acc')}
  else
${put('0', 'acc')}
  end
  break
end
${list((i) => `s${i} = s${i} + delta\n${clampCell(i)}`, '\n')}
${aggregate()}
redis.call('SETRANGE', okey, ats, ${span()})
end
-- the younger generations: decayed, plus delta, clamped; with linear decay the carry-forward
-- (spec/rotator.md): a younger generation never reads a key lower than the oldest did after
-- this write, so a key held at its limit gets no burst back when the oldest retires
${
  sized
    ? SIZED_WRITES
    : `for k = oldest + 1, G do
local j = k - gb
local key = KEYS[kb + 1 + j]
`
}${readBlock('key', 'j', 'k')}
${list(
  (i) => `${decayCell(i, '')}
s${i} = s${i} + delta
${decay === 2 ? `if delta >= 0 and s${i} < acc then s${i} = acc end\n` : ''}${clampCell(i)}`,
  '\n',
)}
redis.call('SETRANGE', key, ats, ${span()})
end
${put('1', 'acc')}
until true
if ro == 1 then ro = 6 else ro = ro + 3 end
end
${exactRecords}
return out
`
  )
}

/**
 * Sync mode: merge one instance's accumulated deltas, log what changed, and return the
 * fleet's cells or what changed in them since this instance's last pull (spec/cluster.md,
 * "Sync mode", "The change log").
 *
 * KEYS: [1] the fingerprint key, [2..K+1] the cells keys of generations gb..gb+K−1, [K+2..2K+1]
 * their change logs (`P l<k>`, beside `P g<k>`).
 * ARGV: 1..5 as in {@link exactScript} (now, periodMs, rate per ms, lo, hi), 6 gb, 7 K, then per generation j in 0..K−1 one
 * binary string of 12-byte records: cell position p = level·M_s + (index − s·M_s) in this
 * slot's string (u32 LE) and the delta (float64 LE), empty when nothing was added; then per
 * generation j its slot's cells per level M_s (decimal), the size a missing generation string
 * is created at (L·M_s·16 bytes: a self-sized generation has its own M, spec/cluster.md
 * "Shapes"); then '1' (the caller reads a full pull with MGET after the reply, which costs Redis
 * less than a Lua string copied into the reply) or '0' (the reply carries it); then per
 * generation j what this instance last pulled of it: `<epoch>:<offset>` (the log's epoch and
 * length then), or empty (nothing: a full pull).
 *
 * Each delta is added to its cell after the cell is decayed to now, clamped to [lo, hi],
 * exactly as `Sketch.update` does cell by cell; deltas for generations that are no longer
 * live (below G−N+1) are dropped. Each merged cell's new 16 bytes are appended to the log as a
 * 20-byte entry `u32le p ‖ f64le score ‖ f64le time`. A log is 8 bytes of epoch (float64 LE:
 * the server's TIME in µs when it was started, above the epoch it replaces) then its entries;
 * it is started anew (the entries dropped) when it would pass 8 + L·M_s·16 bytes (the cells'
 * own size), when its cells string is created by this script, and when it is missing.
 * Reply: `{status, nowMs, G, then per generation j: kind_j, mark_j, v_j}`: kind 0 for a
 * generation that is not live (G−N+1 ≤ gb+j ≤ G), v and mark empty; kind 1 (a delta: the caller's
 * epoch is the log's) with v the log from the caller's offset on; kind 2 (a full pull) with v the
 * raw cells string (empty when absent, or with '1'); mark `<epoch>:<length>` of the log as of the
 * reply, the caller's next `<epoch>:<offset>`. Status −1 (fingerprint) and −3 (period) as in
 * exact mode, with nothing merged.
 */
export const syncScript = (c: ScriptConstants): string =>
  prologue(c) +
  `
local gb = tonumber(ARGV[6])
local K = tonumber(ARGV[7])
local oldest = G - N + 1
-- per window index: the epoch of a log this call started (the pull reads no header for it)
local started = {}
-- a new log (epoch header only) for generation k: above the epoch of the one it replaces
-- (when \`replaces\`: a log always starts with its epoch, except one APPEND just made)
local function freshLog(lkey, k, replaces)
  local tm = redis.call('TIME')
  local e = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
  local h = replaces and redis.call('GETRANGE', lkey, 0, 7) or ''
  if #h == 8 then
    local o = struct.unpack('<d', h)
    if o >= e then e = o + 1 end
  end
  redis.call('SET', lkey, struct.pack('<d', e), 'PX', ttl(k))
  return e
end
for j = 0, K - 1 do
  local blob = ARGV[8 + j]
  local k = gb + j
  if #blob > 0 and k >= oldest then
    local key = KEYS[2 + j]
    local lkey = KEYS[2 + K + j]
    local m = tonumber(ARGV[8 + K + j]) or M
    -- the log holds at most as many bytes as the cells (plus its epoch): a push whose entries
    -- alone would pass that, and one that creates the cells string (loadCell: a missing string
    -- reads short at the first record), start a new log instead (a full pull reads them all anyway)
    local cap = 8 + L * m * 16
    local logged = #blob / 12 * 20 <= cap
    local made = false
    local ent = {}
    local n = 0
    for off = 1, #blob, 12 do
      local p, d = struct.unpack('<I4<d', blob, off)
      local s, t, c = loadCell(key, p, k, m)
      if c then made = true end
      s, t = decayed(s, t)
      -- the cell's 16 bytes packed once for its write and its log entry
      local cell = struct.pack('<d<d', clamp(s + d), t)
      redis.call('SETRANGE', key, p * 16, cell)
      if logged then
        ent[n + 1] = string.sub(blob, off, off + 3)
        ent[n + 2] = cell
        n = n + 2
      end
    end
    if made or not logged then
      started[j] = freshLog(lkey, k, true)
    else
      -- a log that was missing (APPEND made it: no epoch) or would pass its cap starts anew
      local len = redis.call('APPEND', lkey, table.concat(ent))
      if len == #blob / 12 * 20 then
        started[j] = freshLog(lkey, k, false)
      elseif len > cap then
        started[j] = freshLog(lkey, k, true)
      end
    end
  end
end
touchFp()
local apart = ARGV[8 + 2 * K] == '1'
local out = {1, fmt(now), fmt(G)}
for j = 0, K - 1 do
  local k = gb + j
  if k >= oldest and k <= G then
    local lkey = KEYS[2 + K + j]
    local e = started[j]
    if not e then
      local h = redis.call('GETRANGE', lkey, 0, 7)
      if #h == 8 then e = struct.unpack('<d', h) else e = freshLog(lkey, k, false) end
    end
    local se, so = string.match(ARGV[9 + 2 * K + j] or '', '^([^:]+):(%d+)$')
    if se and tonumber(se) == e then
      local tail = redis.call('GETRANGE', lkey, tonumber(so), -1)
      out[#out + 1] = 1
      out[#out + 1] = fmt(e) .. ':' .. string.format('%d', tonumber(so) + #tail)
      out[#out + 1] = tail
    else
      out[#out + 1] = 2
      out[#out + 1] = fmt(e) .. ':' .. string.format('%d', redis.call('STRLEN', lkey))
      local v = false
      if not apart then v = redis.call('GET', KEYS[2 + j]) end
      out[#out + 1] = v or ''
    end
  else
    out[#out + 1] = 0
    out[#out + 1] = ''
    out[#out + 1] = ''
  end
end
return out
`

/** SHA-1 of a script in hex: the name `EVALSHA` knows it by. */
export function scriptSha(source: string): string {
  return createHash('sha1').update(source).digest('hex')
}
