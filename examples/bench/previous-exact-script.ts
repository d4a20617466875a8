// The exact script's unrolled form as it was before issue #15 item 3 (git 317afd1,
// src/cluster/scripts.ts: every call read the fingerprint record, a whole block per generation,
// the block id as decimal), kept only so `examples/bench/redis-time.ts` measures Redis CPU per
// decision before and after in the same run. Not used by grudge; not a second home of the rule
// (the store runs src/cluster/scripts.ts). Its ARGV lack the caller's floor (ARGV[10] now) and
// end each generation's argument with the block id instead of the first cell's byte offset.
import type { ScriptConstants } from '../../src/cluster/scripts.js'

const header = (c: ScriptConstants) => `
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
local raw = redis.call('GET', KEYS[1])
local stored = false
local seenG = nil
if raw then
  local sfp, sp, sg = string.match(raw, '^(%x+):([^:]+):([^:]+)$')
  if sfp ~= fp then
    return {-1, raw, string.format('%.17g', now), '0'}
  end
  if tonumber(sp) ~= period then
    -- another period is recorded: the caller adopts it and repeats (spec/cluster.md, Schedule)
    return {-3, sp, string.format('%.17g', now), '0'}
  end
  stored = true
  seenG = tonumber(sg) or -1
end
-- generation ids: the newest is G, the oldest live one G − N + 1; never older than already seen
local G = math.floor(now / period) + N - 1
if seenG and seenG > G then G = seenG end
`

/** The sized unrolled script's read of generation `j`'s W, B and block bytes BB (locals of the block's scope). */
const sizedBlock = (j: string, L: number) => `local W = tonumber(ARGV[10 + K + ${j}])
local B = tonumber(ARGV[10 + 2 * K + ${j}])
local BB = ${L * 16} * W
`

/** The script for a placement of at most 16 levels, fixed shape (`sized` false), as before. */
export const previousExactScript = (c: ScriptConstants): string => unrolledExactScript(c, false)

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
  // read generation k's block for window index j into the locals o_i (byte offsets in the
  // block), s_i and t_i; a missing generation is created at its full size first
  // (sized: the generation's W and B are arguments, its block bytes BB = L·W·16 a local)
  const bb = sized ? 'BB' : String(BB)
  const readBlock = (key: string, j: string, k: string) => `local a = ARGV[10 + ${j}]
${sized ? sizedBlock(j, L) : ''}local base = tonumber(string.sub(a, ${L + 1})) * ${bb}
local blk = redis.call('GETRANGE', ${key}, base, base + ${sized ? 'BB - 1' : BB - 1})
if #blk < ${bb} then
  -- a new generation: allocate all B blocks at once (zeros), so the string never grows by
  -- SETRANGE's doubling and its memory is exactly B·L·W·16 bytes; it expires on its own
  redis.call('SETRANGE', ${key}, B * ${bb} - 1, '\\0')
  local ms = math.ceil((${k} + 2) * period - now)
  if ms < 1 then ms = 1 end
  redis.call('PEXPIRE', ${key}, ms)
  touch = true
  blk = string.rep('\\0', ${bb})
end
local ${list((i) => `o${i}`)} = string.byte(a, 1, ${L})
${list((i) => (sized ? `o${i} = (o${i} - 97 + ${i - 1} * W) * 16` : `o${i} = o${i} * 16 + ${((i - 1) * W - 97) * 16}`), '\n')}
local ${list((i) => `s${i}, t${i}`)}
${list((i) => `s${i}, t${i} = struct.unpack('<d<d', blk, o${i} + 1)`, '\n')}`
  // the span from the key's first cell to its last, the other keys' cells between as read
  const span = () =>
    levels
      .map((i) => (i === 1 ? '' : `string.sub(blk, o${i - 1} + 17, o${i}) .. `) + `struct.pack('<d<d', s${i}, t${i})`)
      .join(' .. ')
  return (
    header(c) +
    `
local op = tonumber(ARGV[6])
local delta = tonumber(ARGV[7])
local gb = tonumber(ARGV[9])
local K = ${sized ? '(#ARGV - 9) / 3' : '#ARGV - 9'}
-- the fingerprint record lives as long as the newest generation: written when absent or when
-- G moved forward (once per period), its expiry pushed when a generation is created
local touch = not stored or G > seenG
local function finish(status, x)
  if touch then
    local ms = math.ceil((G + 2) * period - now)
    if ms < 1 then ms = 1 end
    redis.call('SET', KEYS[1], fp .. ':' .. ARGV[2] .. ':' .. string.format('%d', G), 'PX', ms)
  end
  local lo32, hi32 = struct.unpack('<i4<i4', struct.pack('<d', x))
  return {status, lo32, hi32, now, G}
end
if op == 3 then return finish(1, 0) end
local oldest = G - N + 1
if oldest < gb or G > gb + K - 1 then
  return {-2, 0, 0, now, G}
end
local oj = oldest - gb
local okey = KEYS[2 + oj]
local acc
local changed = false
do
${readBlock('okey', 'oj', 'oldest')}
${list((i) => decayCell(i, '\n  changed = true'), '\n')}
${aggregate()}
if op == 2 or (op == 0 and acc + delta > tonumber(ARGV[8])) then
  -- a read or a denial: the decayed cells are written back (as the Sketch does), nothing added
  if changed then redis.call('SETRANGE', okey, base + o1, ${span()}) end
  if op == 2 then return finish(1, acc) end
  return finish(0, acc)
end
${list((i) => `s${i} = s${i} + delta\n${clampCell(i)}`, '\n')}
${aggregate()}
redis.call('SETRANGE', okey, base + o1, ${span()})
end
-- the younger generations: decayed, plus delta, clamped; with linear decay the carry-forward
-- (spec/rotator.md): a younger generation never reads a key lower than the oldest did after
-- this write, so a key held at its limit gets no burst back when the oldest retires
for k = oldest + 1, G do
local j = k - gb
local key = KEYS[2 + j]
${readBlock('key', 'j', 'k')}
${list(
  (i) => `${decayCell(i, '')}
s${i} = s${i} + delta
${decay === 2 ? `if delta >= 0 and s${i} < acc then s${i} = acc end\n` : ''}${clampCell(i)}`,
  '\n',
)}
redis.call('SETRANGE', key, base + o1, ${span()})
end
return finish(1, acc)
`
  )
}
