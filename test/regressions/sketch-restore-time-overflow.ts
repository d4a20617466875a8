// Cell times are mapped onto the reader's clock as t + shift. A frame that passes its CRC
// but holds extreme finite times (writer clock ms near +MAX_VALUE, a cell time near
// −MAX_VALUE) mapped a cell to −Infinity: the restored sketch then serialized that time
// and its own reader refused the frame ("time: a finite number"). Mapped times are now
// kept finite (at least −MAX_VALUE: still infinitely old for decay).
import t from 'tap'
import { Sketch, SketchDelta, linear } from '../../src/index.js'
import { FakeClock } from '../../src/testing/index.js'
import { FAMILY, readFrame, writeFrame } from '../../src/format/frame.js'
import { serializeAtWall } from '../sketch/fixtures/serialize-at-wall.js'

const MAX = Number.MAX_VALUE

function craft(frame: Uint8Array, cellTime: number, denseTimeOffset: number | undefined): Uint8Array {
  const parts = readFrame(frame, FAMILY.sketch, 1)
  const params = new Uint8Array(parts.params)
  new DataView(params.buffer).setFloat64(44, MAX, true) // writer clock ms
  const payload = new Uint8Array(parts.payload)
  const dv = new DataView(payload.buffer)
  if (denseTimeOffset !== undefined) {
    for (let o = denseTimeOffset; o < payload.length; o += 8) dv.setFloat64(o, cellTime, true)
  } else dv.setFloat64(8, cellTime, true) // sparse block time
  return writeFrame({ ...parts, seed: new Uint8Array(parts.seed), params, payload })
}

t.test('a full-state frame with extreme times restores to a sketch whose frame reads back', async (t) => {
  const clock = new FakeClock()
  const s = new Sketch({ levels: 1, cellsPerLevel: 4, decay: linear(1), hi: 100, seed: 1, clock })
  for (let i = 0; i < 40; i++) s.update(`k${i}`, 5)
  const crafted = craft(serializeAtWall(s, 0), -MAX, 4 * 8)
  const back = Sketch.deserialize(crafted, { clock, wallMs: 0 })
  const again = serializeAtWall(back, 0)
  t.doesNotThrow(() => Sketch.deserialize(again, { clock, wallMs: 0 }), 'its own frame reads back')
  t.equal(back.estimate('k0'), 0, 'an infinitely old debt has drained')
})

t.test('a sparse delta frame with extreme times maps to finite times', async (t) => {
  const clock = new FakeClock()
  const s = new Sketch({ levels: 1, cellsPerLevel: 64, decay: linear(1), hi: 100, seed: 1, clock })
  s.update('k', 5)
  const crafted = craft(serializeAtWall(s.takeDelta(), 0), -MAX, undefined)
  const d = SketchDelta.deserialize(crafted, { clock, wallMs: 0 })
  t.ok(
    d.touched.every((x) => Number.isFinite(x)),
    'every mapped time finite',
  )
  t.doesNotThrow(() => SketchDelta.deserialize(serializeAtWall(d, 0), { clock, wallMs: 0 }))
})
