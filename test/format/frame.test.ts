import t from 'tap'
import {
  FAMILY,
  FieldReader,
  FieldWriter,
  HEADER_BYTES,
  MAGIC,
  TRAILER_BYTES,
  frameFamily,
  frameSeed,
  invalidField,
  readFrame,
  writeFrame,
} from '../../src/format/frame.js'
import { crc32c } from '../../src/format/crc32c.js'

// The byte layout is the table in src/format/frame.ts (spec/format.md): each field is checked
// at its documented offset, then every reader check is driven by one damaged frame.

const seed = Uint8Array.from({ length: 16 }, (_, i) => 0xf0 + i)
const parts = {
  family: FAMILY.window,
  version: 2,
  flags: 0x0102,
  seed,
  params: Uint8Array.from([1, 2, 3]),
  payload: Uint8Array.from([9, 8, 7, 6, 5]),
}

t.test('writeFrame lays fields out at the documented offsets', async (t) => {
  const f = writeFrame(parts)
  const dv = new DataView(f.buffer)
  t.equal(f.length, HEADER_BYTES + 3 + 5 + TRAILER_BYTES)
  t.equal(HEADER_BYTES, 36)
  t.same([...f.subarray(0, 4)], [0x47, 0x52, 0x44, 0x47], 'magic "GRDG"')
  t.same([...MAGIC], [0x47, 0x52, 0x44, 0x47])
  t.equal(f[4], 6, 'family id')
  t.equal(f[5], 2, 'version')
  t.same([f[6], f[7]], [0x02, 0x01], 'flags u16 LE')
  t.equal(dv.getUint32(8, true), 3, 'params length u32 LE')
  t.same([...f.subarray(12, 28)], [...seed], 'seed')
  t.equal(dv.getUint32(28, true) + dv.getUint32(32, true) * 2 ** 32, 5, 'payload length u64 LE')
  t.same([...f.subarray(36, 39)], [1, 2, 3], 'params at 36')
  t.same([...f.subarray(39, 44)], [9, 8, 7, 6, 5], 'payload after params')
  t.equal(dv.getUint32(44, true), crc32c(f.subarray(0, 44)), 'CRC32C over everything before it')
})

t.test('readFrame returns what was written', async (t) => {
  const back = readFrame(writeFrame(parts), FAMILY.window, 2)
  t.equal(back.family, parts.family)
  t.equal(back.version, 2)
  t.equal(back.flags, 0x0102)
  t.same([...back.seed], [...seed])
  t.same([...back.params], [1, 2, 3])
  t.same([...back.payload], [9, 8, 7, 6, 5])
  const empty = readFrame(writeFrame({ ...parts, params: new Uint8Array(0), payload: new Uint8Array(0) }), 6, 2)
  t.equal(empty.params.length + empty.payload.length, 0, 'empty params and payload')
})

t.test('readFrame refuses every kind of damage with its code', async (t) => {
  const good = writeFrame(parts)
  const damaged = (f: (b: Uint8Array) => Uint8Array | void) => {
    const b = good.slice()
    return f(b) ?? b
  }
  const rows: [string, unknown, number, number, string][] = [
    ['not bytes', 'GRDG', FAMILY.window, 2, 'ERR_GRUDGE_OPTION_INVALID'],
    ['shorter than a header', good.subarray(0, 39), FAMILY.window, 2, 'ERR_GRUDGE_FORMAT_TRUNCATED'],
    ['cut payload', good.subarray(0, good.length - 1), FAMILY.window, 2, 'ERR_GRUDGE_FORMAT_TRUNCATED'],
    ['trailing byte', Uint8Array.from([...good, 0]), FAMILY.window, 2, 'ERR_GRUDGE_FORMAT_INVALID'],
    ['bad magic', damaged((b) => void (b[0] = 0x48)), FAMILY.window, 2, 'ERR_GRUDGE_FORMAT_MAGIC'],
    ['flipped payload bit', damaged((b) => void (b[40] ^= 0x10)), FAMILY.window, 2, 'ERR_GRUDGE_FORMAT_CHECKSUM'],
    ['flipped seed bit', damaged((b) => void (b[12] ^= 1)), FAMILY.window, 2, 'ERR_GRUDGE_FORMAT_CHECKSUM'],
    ['other family', good, FAMILY.sketch, 2, 'ERR_GRUDGE_FORMAT_FAMILY'],
    ['newer version', good, FAMILY.window, 1, 'ERR_GRUDGE_FORMAT_VERSION'],
    ['version 0', writeFrame({ ...parts, version: 0 }), FAMILY.window, 2, 'ERR_GRUDGE_FORMAT_VERSION'],
  ]
  for (const [what, bytes, family, maxVersion, code] of rows)
    t.throws(() => readFrame(bytes as Uint8Array, family, maxVersion), { code }, what)
})

t.test('invalidField names the field, expected and received', async (t) => {
  t.throws(() => invalidField('levels', 'an integer in [1, 64]', 0), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: 'frame field "levels": expected an integer in [1, 64], received 0',
  })
})

t.test('FieldWriter and FieldReader walk the fields in byte-table order, little-endian', async (t) => {
  const bytes = new Uint8Array(20)
  const w = new FieldWriter(bytes)
  w.f64(1.5)
  w.u32(0x01020304)
  w.u8(7)
  w.skip(3)
  w.raw(Uint8Array.of(9, 8, 7, 6))
  t.equal(w.offset, 20)
  t.same([...bytes.subarray(8, 12)], [4, 3, 2, 1], 'u32 little-endian')
  t.same([...bytes.subarray(0, 8)], [0, 0, 0, 0, 0, 0, 0xf8, 0x3f], 'f64 little-endian (1.5 = 0x3ff8000000000000)')
  const r = new FieldReader(bytes)
  t.equal(r.f64('a'), 1.5)
  t.equal(r.u32('b'), 0x01020304)
  t.equal(r.u8('c'), 7)
  r.reserved(3, 'd')
  t.equal(r.offset, 16)
  t.equal(r.remaining, 4)
  const copy = r.raw(4, 'e')
  t.same([...copy], [9, 8, 7, 6])
  bytes[16] = 0
  t.equal(copy[0], 9, 'raw is a copy')
  t.throws(() => r.u8('past'), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /"past": expected 1 bytes at offset 20, received "0 bytes"/,
  })
  const dirty = new FieldReader(Uint8Array.of(0, 1))
  t.throws(() => dirty.reserved(2, 'reserved'), { code: 'ERR_GRUDGE_FORMAT_INVALID', message: /"reserved"/ })
})

t.test('frameFamily and frameSeed read an embedded frame without parsing it', async (t) => {
  const seed = Uint8Array.from({ length: 16 }, (_, i) => i + 1)
  const f = writeFrame({ family: 5, version: 1, flags: 0, seed, params: new Uint8Array(0), payload: new Uint8Array(0) })
  t.equal(frameFamily(f), 5)
  t.same(frameSeed(f), seed)
  t.equal(frameFamily(Uint8Array.of(1, 2)), undefined, 'too short to hold a family')
})
