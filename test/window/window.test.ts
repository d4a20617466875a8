import t from 'tap'
import fc from 'fast-check'
import { Window, type RollEvent } from '../../src/window/window.js'
import { HyperLogLog } from '../../src/window/hyperloglog.js'
import { CountMinSketch } from '../../src/window/count-min.js'
import { FAMILY, readFrame, writeFrame } from '../../src/format/frame.js'
import { FakeClock } from '../../src/testing/index.js'
import { ExactSet, TinySet } from '../fixtures/tiny-set-family.js'
import {
  WINDOW_DESERIALIZE_KEYS,
  WINDOW_OPTION_KEYS,
  type WindowDeserializeOptions,
  type WindowOptions,
} from '../../src/window/window.js'
import type { HyperLogLogSizeOptions } from '../../src/window/hyperloglog.js'
import { typo, unknownOption } from '../unknown-option.js'

type Step =
  | { nowMs: number; action: 'add'; item?: string; expected: number[] }
  | { nowMs: number; action: 'tick'; expected: number[] }
  | { nowMs: number; action: 'slots'; expected: number[] }

/** Run a step table; `expected` is the list of live slot keys (newest first) after the step. */
function run(t: { same(a: unknown, b: unknown, msg: string): unknown }, w: Window<HyperLogLog>, steps: Step[]): void {
  for (const s of steps) {
    if (s.action === 'add') w.addAt(s.nowMs, s.item ?? `at${s.nowMs}`)
    else if (s.action === 'tick') w.tickAt(s.nowMs)
    t.same(
      w.slotsAt(s.nowMs).map((x) => x.key),
      s.expected,
      `${s.action} at ${s.nowMs} → [${s.expected.join(', ')}]`,
    )
  }
}

const hll = (everyMs: number, keep: number, clock = new FakeClock(0)) =>
  new Window(HyperLogLog.bySize({ precision: 10, seed: 1 }), { everyMs, keep, clock })

t.test('reference behaviour: everyMs 1000, keep 3', async (t) => {
  run(t, hll(1000, 3), [
    { nowMs: 0, action: 'add', expected: [0] },
    { nowMs: 2999, action: 'add', expected: [2, 0] },
    { nowMs: 3000, action: 'add', expected: [3, 2] },
  ])
})

t.test('reference behaviour: keep 1 holds only the slot filling', async (t) => {
  run(t, hll(1000, 1), [
    { nowMs: 0, action: 'add', expected: [0] },
    { nowMs: 999, action: 'add', expected: [0] },
    { nowMs: 1000, action: 'add', expected: [1] },
  ])
})

t.test('slot key is floor(now / everyMs), also for negative times', async (t) => {
  run(t, hll(1000, 4), [
    { nowMs: -2001, action: 'add', expected: [-3] },
    { nowMs: -1001, action: 'add', expected: [-2, -3] },
    { nowMs: -1000, action: 'add', expected: [-1, -2, -3] },
    { nowMs: -1, action: 'add', expected: [-1, -2, -3] },
    { nowMs: 0, action: 'add', expected: [0, -1, -2, -3] },
    { nowMs: 999.5, action: 'add', expected: [0, -1, -2, -3] },
    { nowMs: 1000, action: 'add', expected: [1, 0, -1, -2] },
  ])
})

t.test('time never goes back: an earlier nowMs counts as the latest seen', async (t) => {
  const w = hll(1000, 3)
  run(t, w, [
    { nowMs: 5000, action: 'add', item: 'a', expected: [5] },
    { nowMs: 1000, action: 'add', item: 'b', expected: [5] },
    { nowMs: 0, action: 'slots', expected: [5] },
    { nowMs: 7999, action: 'slots', expected: [5] },
    { nowMs: 8000, action: 'slots', expected: [] },
  ])
  t.equal(w.lastSeenMs, 5000)
  t.ok(Math.abs(w.estimateAt(5000) - 2) < 0.01, 'the late item landed in the current slot')
})

t.test('queries are pure: they neither drop slots nor move time', async (t) => {
  const w = hll(1000, 2)
  run(t, w, [
    { nowMs: 0, action: 'add', expected: [0] },
    { nowMs: 500_000, action: 'slots', expected: [] },
    { nowMs: 0, action: 'slots', expected: [0] },
  ])
  t.equal(w.mergedAt(500_000).estimate(), 0)
  t.equal(w.slotCount, 1)
  t.equal(w.lastSeenMs, 0)
})

t.test('a slot is live while its key > current key − keep; tick drops without inserting', async (t) => {
  const w = hll(100, 3)
  run(t, w, [
    { nowMs: 0, action: 'add', expected: [0] },
    { nowMs: 100, action: 'add', expected: [1, 0] },
    { nowMs: 250, action: 'tick', expected: [1, 0] },
    { nowMs: 300, action: 'tick', expected: [1] },
    { nowMs: 399, action: 'tick', expected: [1] },
    { nowMs: 400, action: 'tick', expected: [] },
  ])
  t.equal(w.slotCount, 0)
  t.equal(w.estimateAt(400), 0)
})

t.test('catch-up after a long idle gap drops every expired slot at once', async (t) => {
  const events: RollEvent[] = []
  const w = new Window(HyperLogLog.bySize({ precision: 8, seed: 2 }), {
    everyMs: 1000,
    keep: 3,
    clock: new FakeClock(),
    onRoll: (e) => events.push(e),
  })
  run(t, w, [
    { nowMs: 0, action: 'add', expected: [0] },
    { nowMs: 1000, action: 'add', expected: [1, 0] },
    { nowMs: 2000, action: 'add', expected: [2, 1, 0] },
    // key 4 shares ring cell 1 with key 1: both 0 and 1 are expired (≤ 4 − 3)
    { nowMs: 4000, action: 'add', expected: [4, 2] },
    // far beyond one ring length
    { nowMs: 1e12, action: 'add', expected: [1e9] },
    { nowMs: 1e12 + 3 * 1000 * 1000, action: 'tick', expected: [] },
  ])
  // the moves to keys 1 and 2 dropped nothing, so they are not reported
  t.same(events, [
    { key: 4, previousKey: 2, dropped: 2, slotCount: 2 },
    { key: 1e9, previousKey: 4, dropped: 2, slotCount: 1 },
    { key: 1e9 + 3000, previousKey: 1e9, dropped: 1, slotCount: 0 },
  ])
})

t.test('onRoll fires once per move that drops a slot, never for a move that drops none', async (t) => {
  const events: RollEvent[] = []
  const w = new Window(HyperLogLog.bySize({ precision: 4, seed: 2 }), {
    everyMs: 10,
    keep: 2,
    clock: new FakeClock(),
    onRoll: (e) => events.push(e),
  })
  w.addAt(5, 'a')
  w.addAt(9, 'a')
  w.tickAt(9)
  t.same(events, [])
  w.addAllAt(10, ['b', 'c'])
  w.tickAt(15)
  t.same(events, [], 'the move to key 1 kept key 0: nothing dropped, nothing reported')
  w.addAt(20, 'd')
  t.same(events, [{ key: 2, previousKey: 1, dropped: 1, slotCount: 2 }], 'the move to key 2 dropped key 0')
  w.tickAt(1000)
  t.same(events.length, 2, 'a gap dropping both slots is one event')
  t.same(events[1], { key: 100, previousKey: 2, dropped: 2, slotCount: 0 })
  w.tickAt(2000)
  t.same(events.length, 2, 'a move over an empty ring drops nothing and is not reported')
  t.throws(() => new Window(HyperLogLog.bySize({ precision: 4 }), { everyMs: 10, keep: 2, onRoll: 5 as never }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"onRoll"/,
  })
})

t.test('addAll reads the clock once for the whole batch', async (t) => {
  let reads = 0
  const clock = { now: () => (reads++, 1000 * reads) }
  const w = new Window(HyperLogLog.bySize({ precision: 10, seed: 3 }), { everyMs: 1000, keep: 5, clock })
  w.addAll(['a', 'b', 'c', 'd'])
  t.equal(reads, 1)
  t.same(
    w.slotsAt(1000).map((s) => s.key),
    [1],
  )
  t.ok(Math.abs(w.estimateAt(1000) - 4) < 0.01)
  w.add('e')
  t.equal(reads, 2)
  t.same(
    w.slotsAt(2000).map((s) => s.key),
    [2, 1],
  )
})

t.test('every method without At reads the injected clock; its At twin takes the time first', async (t) => {
  const clock = new FakeClock(10_000)
  const w = new Window(HyperLogLog.bySize({ precision: 10, seed: 4 }), { everyMs: 1000, keep: 2, clock })
  const twin = new Window(HyperLogLog.bySize({ precision: 10, seed: 4 }), { everyMs: 1000, keep: 2, clock })
  w.add('x')
  twin.addAt(10_000, 'x')
  clock.advance(1000)
  w.addAll(['y'])
  twin.addAllAt(11_000, ['y'])
  t.same(
    w.slots().map((s) => s.key),
    [11, 10],
  )
  clock.advance(1000)
  t.same(
    w.slots().map((s) => s.key),
    [11],
  )
  t.same(w.slots(), w.slotsAt(12_000))
  t.ok(Math.abs(w.estimate() - 1) < 0.01)
  t.equal(w.estimate(), w.estimateAt(12_000))
  t.same(w.merged().serialize(), w.mergedAt(12_000).serialize())
  t.equal(w.lastSeenMs, 11_000, 'queries do not move time')
  w.tick()
  twin.tickAt(12_000)
  t.equal(w.lastSeenMs, 12_000, 'tick() moved time to the clock')
  t.same(w.serialize(), twin.serialize(), 'the clock forms and the At forms built the same window')
})

t.test('an empty HyperLogLog window estimates exactly 0', async (t) => {
  const w = hll(1000, 5)
  t.equal(w.estimateAt(0), 0)
  t.same(w.slotsAt(0), [])
  t.equal(w.mergedAt(0).estimate(), 0)
  t.equal(w.slotCount, 0)
})

// Distinct clients per second: 1000 new ones each second. A window of keep 5 holds 5
// slots, so it should see 5000 (within 3σ, σ = 1.04/√4096 = 1.6 %), and never more than
// the all-time estimate of the same items by more than 3σ.
t.test('window estimate: the distinct items of the live slots, never above all-time + error', async (t) => {
  const p = 12
  const sigma = 1.04 / Math.sqrt(2 ** p)
  const w = new Window(HyperLogLog.bySize({ precision: p, seed: 6 }), {
    everyMs: 1000,
    keep: 5,
    clock: new FakeClock(),
  })
  const all = HyperLogLog.bySize({ precision: p, seed: 6 })
  for (let s = 0; s < 12; s++) {
    for (let i = 0; i < 1000; i++) {
      const item = `client-${s * 1000 + i}`
      // some clients come back every second
      w.addAt(s * 1000 + i, item)
      all.add(item)
      if (i < 50) {
        w.addAt(s * 1000 + i, `regular-${i}`)
        all.add(`regular-${i}`)
      }
    }
    const now = s * 1000 + 999
    const live = Math.min(s + 1, 5)
    const truth = live * 1000 + 50
    const est = w.estimateAt(now)
    t.ok(Math.abs(est - truth) <= 3 * sigma * truth, `second ${s}: ${est.toFixed(0)} ≈ ${truth}`)
    t.ok(
      est <= all.estimate() * (1 + 3 * sigma),
      `second ${s}: window ${est.toFixed(0)} ≤ all-time ${all.estimate().toFixed(0)} + 3σ`,
    )
  }
})

t.test('merged() is a fresh sketch: changing it changes nothing in the window', async (t) => {
  const w = hll(1000, 3)
  w.addAt(0, 'a')
  const m = w.mergedAt(0)
  m.add('b')
  m.add('c')
  t.ok(Math.abs(w.estimateAt(0) - 1) < 0.01)
  t.not(m, w.slotsAt(0)[0].sketch)
})

t.test('Count-Min windows: estimate() asks for the item; merged counts the live slots', async (t) => {
  const w = new Window(CountMinSketch.bySize({ width: 256, depth: 4, seed: 1 }), {
    everyMs: 60_000,
    keep: 5,
    clock: new FakeClock(),
  })
  for (let m = 0; m < 8; m++) w.addAllAt(m * 60_000, Array(m + 1).fill('rejected-ip'))
  t.throws(() => w.estimateAt(7 * 60_000), {
    code: 'ERR_GRUDGE_UNSUPPORTED_OPERATION',
    message: /CountMinSketch; pass the item: estimate\(item\)/,
  })
  t.equal(w.estimateAt(7 * 60_000, 'rejected-ip'), 4 + 5 + 6 + 7 + 8, 'the per-item form sums the live slots')
  const merged = w.mergedAt(7 * 60_000)
  t.equal(merged.estimate('rejected-ip'), 4 + 5 + 6 + 7 + 8, 'the last 5 minutes only')
  t.equal(merged.totalCount, 30)
  t.equal(w.slotCount, 5)
})

t.test('a family of your own works the same (tiny test family)', async (t) => {
  const w = new Window(new TinySet({ salt: 3 }), { everyMs: 10, keep: 2, clock: new FakeClock() })
  w.addAt(0, 'a')
  w.addAt(10, 'b')
  w.addAt(25, 'c')
  const m = w.mergedAt(25)
  t.ok(m.has('b') && m.has('c'))
  t.equal(m.estimate(), w.estimateAt(25))
  t.same(
    w.slotsAt(25).map((s) => s.key),
    [2, 1],
  )
})

t.test('construction errors name the option or the family', async (t) => {
  class NoMerge {
    add(): void {}
    isCompatible(): boolean {
      return true
    }
    serialize(): Uint8Array {
      return new Uint8Array(0)
    }
    sizeBytes(): number {
      return 0
    }
    static deserialize(): NoMerge {
      return new NoMerge()
    }
  }
  t.throws(() => new Window(new NoMerge() as never, { everyMs: 1000, keep: 3 }), {
    code: 'ERR_GRUDGE_UNSUPPORTED_OPERATION',
    message: /template NoMerge.*merge\(\) method/,
  })
  const notSketches: Array<[string, unknown]> = [
    ['null', null],
    ['undefined', undefined],
    ['a number', 5],
    ['the class instead of a sketch', HyperLogLog],
  ]
  for (const [name, bad] of notSketches) {
    t.throws(
      () => new Window(bad as never, { everyMs: 1000, keep: 3 }),
      { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"template"/ },
      name,
    )
  }
  const used = HyperLogLog.bySize({ precision: 4, seed: 1 })
  used.add('x')
  t.throws(() => new Window(used, { everyMs: 1000, keep: 3 }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"template": expected an empty HyperLogLog/,
  })
  const opts: Array<[object, RegExp]> = [
    [{ keep: 3 }, /"everyMs"/],
    [{ everyMs: 0, keep: 3 }, /"everyMs"/],
    [{ everyMs: -1000, keep: 3 }, /"everyMs"/],
    [{ everyMs: 1.5, keep: 3 }, /"everyMs"/],
    [{ everyMs: Number.NaN, keep: 3 }, /"everyMs"/],
    [{ everyMs: '1000', keep: 3 }, /"everyMs"/],
    [{ everyMs: 1000 }, /"keep"/],
    [{ everyMs: 1000, keep: 0 }, /"keep"/],
    [{ everyMs: 1000, keep: 2.5 }, /"keep"/],
    [{ everyMs: 1000, keep: -3 }, /"keep"/],
    [{ everyMs: 1000, keep: 2 ** 20 + 1 }, /"keep"/],
    [{ everyMs: 1000, keep: 3, clock: {} }, /"clock"/],
  ]
  for (const [o, re] of opts) {
    t.throws(
      () => new Window(HyperLogLog.bySize({ precision: 10 }), o as never),
      { code: 'ERR_GRUDGE_OPTION_INVALID', message: re },
      JSON.stringify(o),
    )
  }
  t.throws(() => new Window(HyperLogLog.bySize({ precision: 10 }), undefined as never), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
  })
  t.throws(() => new Window(HyperLogLog.bySize({ precision: 99 }), { everyMs: 1000, keep: 3 }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"precision"/,
  })
})

t.test('non-finite times are rejected with a coded error and change nothing', async (t) => {
  const w = hll(1000, 3)
  w.addAt(0, 'a')
  for (const bad of [Number.NaN, Infinity, -Infinity]) {
    t.throws(() => w.addAt(bad, 'b'), { code: 'ERR_GRUDGE_VALUE_NOT_FINITE', message: /nowMs/ })
    t.throws(() => w.tickAt(bad), { code: 'ERR_GRUDGE_VALUE_NOT_FINITE' })
    t.throws(() => w.slotsAt(bad), { code: 'ERR_GRUDGE_VALUE_NOT_FINITE' })
    t.throws(() => w.mergedAt(bad), { code: 'ERR_GRUDGE_VALUE_NOT_FINITE' })
  }
  t.equal(w.lastSeenMs, 0)
  t.throws(() => w.addAt(0, 5 as never), { code: 'ERR_GRUDGE_KEY_INVALID' })
})

t.test('sizeBytes counts the template and every held slot', async (t) => {
  const w = hll(1000, 3)
  t.equal(w.sizeBytes(), 1024)
  w.addAt(0, 'a')
  w.addAt(1000, 'a')
  t.equal(w.sizeBytes(), 3 * 1024)
  w.tickAt(10_000)
  t.equal(w.sizeBytes(), 1024)
})

t.test('all slots share the template seed, even with a random seed', async (t) => {
  const w = new Window(HyperLogLog.bySize({ precision: 8 }), { everyMs: 10, keep: 4, clock: new FakeClock() })
  for (let i = 0; i < 4; i++) w.addAt(i * 10, `x${i}`)
  const slots = w.slotsAt(30)
  t.equal(slots.length, 4)
  for (const s of slots) t.ok(s.sketch.isCompatible(slots[0].sketch))
  t.doesNotThrow(() => w.mergedAt(30))
})

t.test('serialize / deserialize: same slots, same answers, same future', async (t) => {
  const clock = new FakeClock()
  const w = new Window(HyperLogLog.bySize({ precision: 9, seed: 8 }), { everyMs: 1000, keep: 4, clock })
  for (let i = 0; i < 50; i++) w.addAt(i * 70 - 500, `c${i}`)
  const bytes = w.serialize()
  t.equal(bytes[4], FAMILY.window, 'family id 6')
  const back = Window.deserialize<HyperLogLog>(bytes, { clock })
  t.same(back.serialize(), bytes)
  t.equal(back.everyMs, 1000)
  t.equal(back.keep, 4)
  t.equal(back.lastSeenMs, w.lastSeenMs)
  t.same(
    back.slotsAt(3000).map((s) => s.key),
    w.slotsAt(3000).map((s) => s.key),
  )
  t.equal(back.estimateAt(3000), w.estimateAt(3000))
  for (const [item, now] of [
    ['late', 1000],
    ['n1', 3100],
    ['n2', 3200],
    ['n3', 6000],
  ] as const) {
    w.addAt(now, item)
    back.addAt(now, item)
    t.same(back.serialize(), w.serialize(), `after add at ${now}`)
  }
  // empty window round trip
  const empty = hll(1000, 3)
  const e2 = Window.deserialize(empty.serialize())
  t.equal(e2.estimateAt(0), 0)
  t.equal(e2.lastSeenMs, -Infinity)
  // Count-Min window
  const c = new Window(CountMinSketch.bySize({ width: 64, depth: 3, seed: 2, conservative: true }), {
    everyMs: 10,
    keep: 3,
    clock,
  })
  c.addAllAt(0, ['a', 'a', 'b'])
  c.addAt(15, 'a')
  const c2 = Window.deserialize<CountMinSketch>(c.serialize())
  t.equal(c2.mergedAt(15).estimate('a'), 3)
  t.equal(c2.mergedAt(15).totalCount, 4)
})

t.test('deserialize rejects garbage and every inconsistent field with a coded error', async (t) => {
  t.throws(() => Window.deserialize(Uint8Array.of(0x13, 0x37, 0x42)), { code: 'ERR_GRUDGE_FORMAT_TRUNCATED' })
  t.throws(() => Window.deserialize(HyperLogLog.bySize({ precision: 4, seed: 1 }).serialize()), {
    code: 'ERR_GRUDGE_FORMAT_FAMILY',
  })
  t.throws(() => Window.deserialize('abc' as never), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  const w = hll(1000, 3)
  w.addAt(0, 'a')
  w.addAt(1000, 'b')
  w.addAt(2500, 'c')
  const good = w.serialize()
  const flipped = good.slice()
  flipped[100] ^= 4
  t.throws(() => Window.deserialize(flipped), { code: 'ERR_GRUDGE_FORMAT_CHECKSUM' })
  const f = readFrame(good, FAMILY.window, 1)
  const edit = (fn: (params: DataView, payload: Uint8Array) => void, flags = 0): Uint8Array => {
    const params = f.params.slice()
    const payload = f.payload.slice()
    fn(new DataView(params.buffer), payload)
    return writeFrame({ ...f, flags, params, payload })
  }
  const tplLen = new DataView(f.payload.buffer, f.payload.byteOffset).getUint32(0, true)
  const firstKey = 4 + tplLen
  const rows: Array<[string, Uint8Array, RegExp]> = [
    ['flags', edit(() => {}, 1), /flags/],
    ['everyMs 0', edit((p) => p.setFloat64(0, 0, true)), /everyMs/],
    ['everyMs 1.5', edit((p) => p.setFloat64(0, 1.5, true)), /everyMs/],
    ['keep 0', edit((p) => p.setUint32(8, 0, true)), /keep/],
    ['slot count above keep', edit((p) => p.setUint32(8, 2, true)), /slotCount/],
    ['reserved', edit((p) => p.setUint8(13, 1)), /reserved/],
    ['lastSeen NaN', edit((p) => p.setFloat64(16, Number.NaN, true)), /lastSeenMs/],
    ['slots before any time', edit((p) => p.setFloat64(16, -Infinity, true)), /slotCount/],
    ['slot expired as of lastSeen', edit((p) => p.setFloat64(16, 4000, true)), /slots\[\d\]\.key/],
    [
      'slot key in the future',
      edit((_, pl) => new DataView(pl.buffer).setFloat64(firstKey, 9, true)),
      /slots\[0\]\.key/,
    ],
    [
      'slot key not an integer',
      edit((_, pl) => new DataView(pl.buffer).setFloat64(firstKey, 1.5, true)),
      /slots\[0\]\.key/,
    ],
    [
      'slot keys out of order',
      edit((_, pl) => new DataView(pl.buffer).setFloat64(firstKey, 0, true)),
      /slots\[1\]\.key/,
    ],
    [
      'slot frame length too long',
      edit((_, pl) => new DataView(pl.buffer).setUint32(firstKey + 8, 1e6, true)),
      /slots\[0\]/,
    ],
    ['slot family id', edit((p) => p.setUint8(12, FAMILY.countMin)), /template/],
    [
      'trailing payload',
      (() => {
        const payload = new Uint8Array(f.payload.length + 1)
        payload.set(f.payload)
        return writeFrame({ ...f, payload })
      })(),
      /payload/,
    ],
  ]
  for (const [name, bytes, re] of rows) {
    t.throws(() => Window.deserialize(bytes), { code: 'ERR_GRUDGE_FORMAT_INVALID', message: re }, name)
  }
  // a slot with another seed than the template
  const other = HyperLogLog.bySize({ precision: 10, seed: 2 }).serialize()
  const tpl = f.payload.subarray(4, 4 + tplLen)
  const payload = new Uint8Array(4 + tplLen + 12 + other.length)
  const dv = new DataView(payload.buffer)
  dv.setUint32(0, tplLen, true)
  payload.set(tpl, 4)
  dv.setFloat64(4 + tplLen, 2, true)
  dv.setUint32(4 + tplLen + 8, other.length, true)
  payload.set(other, 4 + tplLen + 12)
  const params = f.params.slice()
  new DataView(params.buffer).setUint32(24, 1, true)
  t.throws(() => Window.deserialize(writeFrame({ ...f, params, payload })), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /compatible with the template/,
  })
})

t.test('a window of another family needs options.family to load', async (t) => {
  const w = new Window(new TinySet({ salt: 9 }), { everyMs: 10, keep: 2, clock: new FakeClock() })
  w.addAt(0, 'a')
  w.addAt(12, 'b')
  const bytes = w.serialize()
  t.throws(() => Window.deserialize(bytes), { code: 'ERR_GRUDGE_FORMAT_FAMILY', message: /options\.family/ })
  const back = Window.deserialize(bytes, { family: TinySet })
  t.equal(back.estimateAt(12), w.estimateAt(12))
  t.ok(back.mergedAt(12).has('a'))
  t.throws(() => Window.deserialize(bytes, { family: HyperLogLog }), { code: 'ERR_GRUDGE_FORMAT_FAMILY' })
})

// Model check: a Window over an exact set against a naive map of slot key → items, over
// random operation sequences (time steps from 0 to far beyond the ring, backwards steps,
// ticks, queries at later times, serialize/deserialize round trips).
t.test('Window matches a naive model of its rules (property)', async (t) => {
  const op = fc.oneof(
    fc.record({
      kind: fc.constant('add' as const),
      dt: fc.integer({ min: -3000, max: 5000 }),
      item: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
    }),
    fc.record({
      kind: fc.constant('tick' as const),
      dt: fc.oneof(fc.integer({ min: -100, max: 4000 }), fc.constant(1e9)),
    }),
    fc.record({ kind: fc.constant('query' as const), dt: fc.integer({ min: -2000, max: 6000 }) }),
    fc.record({ kind: fc.constant('reload' as const) }),
  )
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 2000 }),
      fc.integer({ min: 1, max: 6 }),
      fc.integer({ min: -10_000, max: 10_000 }),
      fc.array(op, { maxLength: 60 }),
      (everyMs, keep, start, ops) => {
        const events: RollEvent[] = []
        const onRoll = (e: RollEvent) => events.push(e)
        let w = new Window(new ExactSet(), { everyMs, keep, clock: new FakeClock(), onRoll })
        const model = new Map<number, Set<string>>()
        let last = -Infinity
        let curKey = -Infinity
        let t0 = start
        const liveKeys = (now: number) => {
          const k = Math.floor(Math.max(now, last) / everyMs)
          return [...model.keys()].filter((x) => x > k - keep).sort((a, b) => b - a)
        }
        const expected: RollEvent[] = []
        const move = (now: number, slotDelta: number) => {
          if (now <= last) return
          last = now
          const k = Math.floor(now / everyMs)
          if (k === curKey) return
          let dropped = 0
          for (const key of [...model.keys()]) {
            if (key <= k - keep) {
              model.delete(key)
              dropped++
            }
          }
          // reported only when a slot was dropped (seed parity with ExDataSketch)
          if (dropped > 0) expected.push({ key: k, previousKey: curKey, dropped, slotCount: model.size + slotDelta })
          curKey = k
        }
        for (const o of ops) {
          if (o.kind === 'reload') {
            w = Window.deserialize(w.serialize(), { family: ExactSet, clock: new FakeClock(), onRoll })
            continue
          }
          t0 += o.dt
          if (o.kind === 'add') {
            const k = Math.floor(Math.max(t0, last) / everyMs)
            move(t0, model.has(k) ? 0 : 1)
            if (!model.has(k)) model.set(k, new Set())
            model.get(k)!.add(o.item)
            w.addAt(t0, o.item)
          } else if (o.kind === 'tick') {
            move(t0, 0)
            w.tickAt(t0)
          }
          if (JSON.stringify(events) !== JSON.stringify(expected)) return false
          const q = o.kind === 'query' ? t0 : last === -Infinity ? t0 : last
          const got = w.slotsAt(q)
          const want = liveKeys(q)
          if (JSON.stringify(got.map((s) => s.key)) !== JSON.stringify(want)) return false
          for (let i = 0; i < got.length; i++) {
            if ([...got[i].sketch.items].sort().join() !== [...model.get(want[i])!].sort().join()) return false
          }
          const union = new Set(want.flatMap((k) => [...model.get(k)!]))
          if (w.estimateAt(q) !== union.size) return false
          if (w.slotCount !== model.size) return false
        }
        return true
      },
    ),
    { seed: 1234, numRuns: 300 },
  )
  t.pass('slots, contents, estimate, slotCount and roll events match the model')
})

t.test('estimate(item) sums per-slot counts: ≥ truth, ≤ the merged estimate, pure', async (t) => {
  const w = new Window(CountMinSketch.bySize({ width: 32, depth: 3, seed: 5 }), {
    everyMs: 1000,
    keep: 3,
    clock: new FakeClock(),
  })
  const truth = new Map<string, number>()
  // a crowded sketch so that collisions matter; slots 0..4, the window keeps 2, 3, 4
  for (let s = 0; s < 5; s++) {
    for (let i = 0; i < 200; i++) {
      const k = `k${(i * 31 + s * 7) % 60}`
      w.addAt(s * 1000 + i, k)
      if (s >= 2) truth.set(k, (truth.get(k) ?? 0) + 1)
    }
  }
  const merged = w.mergedAt(4999)
  let tighter = 0
  for (let i = 0; i < 60; i++) {
    const k = `k${i}`
    const e = w.estimateAt(4999, k)
    const perSlot = w.slotsAt(4999).reduce((acc, s) => acc + s.sketch.estimate(k), 0)
    t.equal(e, perSlot, `${k}: the sum of the live slots`)
    t.ok(
      e >= (truth.get(k) ?? 0) && e <= merged.estimate(k),
      `${k}: ${truth.get(k) ?? 0} ≤ ${e} ≤ ${merged.estimate(k)}`,
    )
    if (e < merged.estimate(k)) tighter++
  }
  t.ok(tighter > 0, `${tighter} of 60 items tighter than the merged sketch`)
  t.equal(w.estimateAt(10_000, 'k1'), 0, 'everything expired at a later time')
  t.equal(w.slotCount, 3, 'the query dropped nothing')
  const h = hll(1000, 2)
  t.throws(() => h.estimateAt(0, 'a'), {
    code: 'ERR_GRUDGE_UNSUPPORTED_OPERATION',
    message: /HyperLogLog; call estimate\(\) without an item/,
  })
})

t.test(
  "an unknown window option throws naming it; bad family options are the family's to refuse; every option passes",
  async (t) => {
    const clock = new FakeClock(0)
    t.throws(
      () => new Window(HyperLogLog.bySize({ precision: 4 }), typo<WindowOptions>({ everyMs: 1000, keep: 3, kepp: 4 })),
      unknownOption('kepp', 'keep'),
    )
    t.throws(
      () => new Window(HyperLogLog.bySize(typo<HyperLogLogSizeOptions>({ precission: 4 })), { everyMs: 1000, keep: 3 }),
      unknownOption('precission', 'precision'),
    )
    const all: Required<WindowOptions> = { everyMs: 1000, keep: 3, clock, onRoll: () => {} }
    t.same(Object.keys(all).sort(), [...WINDOW_OPTION_KEYS].sort(), 'the test names every option')
    const w = new Window(HyperLogLog.bySize({ precision: 4 }), all)
    w.addAt(0, 'a')
    const bytes = w.serialize()
    t.throws(
      () => Window.deserialize(bytes, typo<WindowDeserializeOptions>({ onroll: () => {} })),
      unknownOption('onroll', 'onRoll'),
    )
    const read: Required<WindowDeserializeOptions<HyperLogLog>> = { clock, onRoll: () => {}, family: HyperLogLog }
    t.same(Object.keys(read).sort(), [...WINDOW_DESERIALIZE_KEYS].sort(), 'the test names every option')
    t.equal(Window.deserialize(bytes, read).estimateAt(0), w.estimateAt(0))
  },
)
