import t from 'tap'
import { decodeWindow, encodeWindow } from '../../src/window/window-codec.js'
import { HyperLogLog } from '../../src/window/hyperloglog.js'
import { CountMinSketch } from '../../src/window/count-min.js'
import { FAMILY, readFrame } from '../../src/format/frame.js'
import { TinySet } from '../fixtures/tiny-set-family.js'

// The codec on its own: parts in, frame out, the same parts back (the Window-level checks of
// every field live in window.test.ts, the byte-exact frames in golden.test.ts).
t.test('encodeWindow / decodeWindow round-trip the parts, newest slot first', async (t) => {
  const template = HyperLogLog.bySize({ precision: 4, seed: 7 })
  const a = template.emptyLike()
  a.add('a')
  const b = template.emptyLike()
  b.add('b')
  const bytes = encodeWindow({
    everyMs: 1000,
    keep: 3,
    lastSeenMs: 2500,
    template,
    slots: [
      { key: 2, sketch: b },
      { key: 0, sketch: a },
    ],
  })
  const f = readFrame(bytes, FAMILY.window, 1)
  t.same(f.seed, template.serialize().subarray(12, 28), 'the header seed is the template seed')
  const back = decodeWindow<HyperLogLog>(bytes, undefined)
  t.equal(back.everyMs, 1000)
  t.equal(back.keep, 3)
  t.equal(back.lastSeenMs, 2500)
  t.same(back.template.serialize(), template.serialize())
  t.same(
    back.slots.map((s) => s.key),
    [2, 0],
  )
  t.same(back.slots[0].sketch.serialize(), b.serialize())
  t.same(encodeWindow(back), bytes, 'decode then encode gives the same bytes')
})

t.test('decodeWindow finds the built-in families by id and needs the class for any other', async (t) => {
  const cms = CountMinSketch.bySize({ width: 8, depth: 2, seed: 1 })
  const empty = { everyMs: 10, keep: 2, lastSeenMs: -Infinity, slots: [] }
  t.ok(decodeWindow(encodeWindow({ ...empty, template: cms }), undefined).template instanceof CountMinSketch)
  const tiny = encodeWindow({ ...empty, template: new TinySet({ salt: 2 }) })
  t.throws(() => decodeWindow(tiny, undefined), { code: 'ERR_GRUDGE_FORMAT_FAMILY' })
  t.ok(decodeWindow(tiny, TinySet).template instanceof TinySet)
})
