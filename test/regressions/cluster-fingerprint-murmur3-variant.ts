// The default murmur3 changed from h1 of MurmurHash3_x64_128 (hasher id 1) to bytes 0..7 of
// MurmurHash3_x86_128 (id 3), but the fleet fingerprint text kept the hasher *name*, and
// both are named 'murmur3' in their release: a node still on the old default and a node on
// the new one stored and accepted the same fingerprint, then wrote the same Redis cells
// under different hash functions (silent corruption during a rolling upgrade). The
// fingerprint must tell the two apart, and must still match between an old node and a
// new node pinned to the x64_128 variant (the same cells: they can share a fleet).
import t from 'tap'
// @ts-expect-error no types shipped
import siphashRef from 'siphash'
import { fleetShape } from '../../src/cluster/connection.js'
import { parseRedisOptions } from '../../src/cluster/options.js'
import { Murmur3Hasher, murmur3, sipHash, type Hasher } from '../../src/hash/hasher.js'
import { linear } from '../../src/sketch/decay.js'

const SECRET_HEX = '000102030405060708090a0b0c0d0e0f'

/** The documented fingerprint (spec/cluster.md), computed by the siphash package. */
function refFingerprint(hasherField: string, tail = '|slot0'): string {
  // exact mode: the blocked layout's W (8 cells per level in a block), then `slot0` for S = 16 > 1
  // (slot 0 under the policy's own hash tag) end the text (spec/cluster.md)
  const text = `grudge-fleet/3|exact|${hasherField}|4|1024|16|linear|min|2|W8${tail}`
  // key words: the 16 secret bytes as four little-endian u32 (bytes 0..15 = 0x00..0x0f)
  const key = [0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c]
  const r = siphashRef.hash(key, new Uint8Array(Buffer.from(text, 'utf8')))
  return (r.h >>> 0).toString(16).padStart(8, '0') + (r.l >>> 0).toString(16).padStart(8, '0')
}

function fleetFingerprint(hasher: Hasher): string {
  const o = parseRedisOptions({ redis: 'redis://127.0.0.1:1', seed: SECRET_HEX })
  return fleetShape(
    {
      name: 'p',
      sketch: { levels: 4, cellsPerLevel: 1024, decay: linear(1), lo: 0, hi: 10, aggregator: 'min', hasher },
      generations: 2,
      periodMs: 60_000,
    },
    o,
  ).fingerprint
}

t.test('the fleet fingerprint tells the two murmur3 variants apart', async (t) => {
  // what a node with the x64_128 h1 variant stores (the default murmur3 before 0.1.0, named 'murmur3')
  const oldDefault = refFingerprint('murmur3')
  t.not(fleetFingerprint(murmur3(1)), oldDefault, 'the new default (x86_128) is refused by an old-default fleet')
  t.equal(
    fleetFingerprint(new Murmur3Hasher(1, 'x64_128')),
    oldDefault,
    'a node pinned to x64_128 places keys as the old default did and joins its fleet',
  )
  t.not(fleetFingerprint(murmur3(1)), fleetFingerprint(new Murmur3Hasher(1, 'x64_128')))
  t.equal(fleetFingerprint(sipHash(1)), refFingerprint('siphash'), 'SipHash fleets are unchanged')
  // a snapshot node kept slot 0 of S > 1 under {name#0}, where no node now writes: refused
  // on the slots both use, rather than splitting slot 0's keys
  t.not(fleetFingerprint(sipHash(1)), refFingerprint('siphash', ''), 'the text before slot0 is refused')
})
