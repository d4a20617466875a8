import t from 'tap'
import { Window } from '../../src/window/window.js'
import { HyperLogLog } from '../../src/window/hyperloglog.js'
import { CountMinSketch } from '../../src/window/count-min.js'
import { FAMILY, readFrame, writeFrame } from '../../src/format/frame.js'
import { FakeClock } from '../../src/testing/index.js'

// Two fields of a window frame were read but never checked against each other (CRC32C
// recomputed, so only the field checks can catch them): the header seed, which spec §4
// says holds the template's seed, and the template itself, which must be an empty sketch.
function frameOf(w: Window) {
  return readFrame(w.serialize(), FAMILY.window, 1)
}

/** The frame with its template replaced by `tpl`. */
function withTemplate(f: ReturnType<typeof frameOf>, tpl: Uint8Array): Uint8Array {
  const tplLen = new DataView(f.payload.buffer, f.payload.byteOffset).getUint32(0, true)
  const rest = f.payload.subarray(4 + tplLen)
  const payload = new Uint8Array(4 + tpl.length + rest.length)
  new DataView(payload.buffer).setUint32(0, tpl.length, true)
  payload.set(tpl, 4)
  payload.set(rest, 4 + tpl.length)
  return writeFrame({ ...f, payload })
}

t.test('a header seed other than the template seed is rejected', async (t) => {
  const w = new Window(HyperLogLog.bySize({ precision: 4, seed: 1 }), {
    everyMs: 1000,
    keep: 3,
    clock: new FakeClock(),
  })
  w.addAt(0, 'a')
  const f = frameOf(w)
  const seed = f.seed.slice()
  seed[0] ^= 1
  t.throws(() => Window.deserialize(writeFrame({ ...f, seed })), { code: 'ERR_GRUDGE_FORMAT_INVALID', message: /seed/ })
  t.doesNotThrow(() => Window.deserialize(writeFrame(f)), 'the unedited frame loads')
})

t.test('a template that is not empty is rejected', async (t) => {
  const hll = new Window(HyperLogLog.bySize({ precision: 4, seed: 1 }), {
    everyMs: 1000,
    keep: 3,
    clock: new FakeClock(),
  })
  hll.addAt(0, 'a')
  const full = HyperLogLog.bySize({ precision: 4, seed: 1 })
  full.add('x')
  t.throws(() => Window.deserialize(withTemplate(frameOf(hll), full.serialize())), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /template/,
  })
  const cms = new Window(CountMinSketch.bySize({ width: 8, depth: 2, seed: 1 }), {
    everyMs: 1000,
    keep: 3,
    clock: new FakeClock(),
  })
  const counted = CountMinSketch.bySize({ width: 8, depth: 2, seed: 1 })
  counted.add('x', 3)
  t.throws(() => Window.deserialize(withTemplate(frameOf(cms), counted.serialize())), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /template/,
  })
})
