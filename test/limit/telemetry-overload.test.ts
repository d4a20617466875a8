import t from 'tap'
import { runTraffic, type TrafficTimeline } from '../../examples/bench/no-size-option.js'

// Issue 14, telemetry honesty: stats().falsePositiveRate, the predicted false-reject rate of a
// fresh key, against the refused share of fresh clients' requests that the same Limiter
// measures (examples/bench/no-size-option.ts's traffic: fresh clients of 3 requests 1 s apart,
// rate 1, burst 10, on a fake clock), at a fixed 4 × 512 shape: at steady loads up to an
// overload (ρ = 3 × clients per second / M offered), and right after a jump. "Within 2×" is
// spec/sizing.md §6's agreement: a factor of 2, or 1e-6 absolute.
const M = 512
const L = 4

function agrees(predicted: number, measured: number): boolean {
  return Math.abs(predicted - measured) <= 1e-6 || (predicted <= 2 * measured && measured <= 2 * predicted)
}

/** Refused / requested of fresh clients over the seconds [from, to). */
function refusedShare(tl: TrafficTimeline, from: number, to: number): number {
  let n = 0
  let r = 0
  for (let s = from; s < to; s++) {
    n += tl.requests[s]
    r += tl.refused[s]
  }
  return r / Math.max(1, n)
}

const clientsAt = (rho: number): number => Math.round((rho * M) / 3)

t.test('steady loads, overload included: the prediction is within 2× of the refused share measured', async (t) => {
  for (const rho of [0.5, 1, 1.5, 2, 4]) {
    const D = 60
    let predicted = NaN
    let loadFactor = NaN
    const { timeline, limiter } = runTraffic(() => clientsAt(rho), D, 0, {
      levels: L,
      cellsPerLevel: M,
      onSecond: (s, l) => {
        if (s !== D) return
        const st = l.telemetry.stats()
        predicted = st.falsePositiveRate
        loadFactor = st.loadFactor
      },
    })
    await limiter.close()
    // the last 20 s (the cells are stationary after the first 20 at every one of these loads)
    const measured = refusedShare(timeline, D - 20, D)
    const sent = timeline.requests.slice(D - 20, D).reduce((a, b) => a + b, 0)
    const refused = timeline.refused.slice(D - 20, D).reduce((a, b) => a + b, 0)
    // at ρ 0.5 the 1e-6 rule judges (about 1e-7 predicted, 0 of 5,100 measured): since the carry
    // walk interpolates between its grid points the prediction no longer jumps to 1.68e-6 when
    // the HyperLogLog reads B above 3 (spec/sizing.md §2.5), which failed this row in CI
    t.ok(
      agrees(predicted, measured),
      `ρ ${rho}: predicted ${predicted.toExponential(2)}, measured ${measured.toExponential(2)} (${refused} of ${sent}; stats ρ ${loadFactor.toFixed(2)})`,
    )
    // the model's ρ is the offered one (admitted plus refused), not the admitted that saturates near 1
    t.ok(Math.abs(loadFactor - rho) <= 0.05 * rho, `ρ ${rho}: stats ρ ${loadFactor.toFixed(3)}`)
  }
})

t.test('right after a jump the prediction follows the new load within two check windows', async (t) => {
  const J = 110
  const D = J + 40
  const low = 0.25
  const high = 2
  const predicted: number[] = []
  const { timeline, limiter } = runTraffic((s) => clientsAt(s < J ? low : high), D, 0, {
    levels: L,
    cellsPerLevel: M,
    onSecond: (s, l) => {
      predicted[s] = l.telemetry.stats().falsePositiveRate
    },
  })
  await limiter.close()
  const before = refusedShare(timeline, J - 20, J)
  t.ok(agrees(predicted[J], before), `before the jump: predicted ${predicted[J]}, measured ${before}`)
  // the rate the new load leads to: the refused share once the cells have filled
  const settled = refusedShare(timeline, J + 20, D)
  t.ok(settled > 0.1, `the new load is an overload: ${settled}`)
  // a client's 3 requests span 3 s: from J + 3 every request is at the new load
  t.ok(agrees(predicted[J + 3], settled), `at J + 3 s predicted ${predicted[J + 3]}, settled ${settled}`)
  t.ok(agrees(predicted[D], settled), `at J + 40 s predicted ${predicted[D]}, settled ${settled}`)
  // while the cells fill, the measured share climbs to it: the prediction is never below half of it
  for (let s = J + 3; s < D; s++) {
    const m = refusedShare(timeline, s - 1, s)
    if (!(predicted[s] >= m / 2 - 1e-6))
      t.fail(`second ${s - J} after the jump: predicted ${predicted[s]} < measured ${m} / 2`)
  }
})

t.test('heavy hitters inside an overload: their own refusals do not count as load', async (t) => {
  // spec/sizing.md §7: 50 hitters at 20 requests/s beside ρ 1 of fresh clients on 4 × 2,048,
  // here scaled to 4 × 512 (12 hitters). Their refusals are self-inflicted (20 times their rate);
  // counted as offered load (the aggregate cap cannot separate them: the innocents' refused keys
  // raise it) they read ρ 1.47 and a prediction 7× the measured share. The refused-key summary's
  // per-key cap counts a key refused above its rate second after second at its rate.
  const D = 150
  const hitters = 12
  let predicted = NaN
  let loadFactor = NaN
  const { timeline, limiter } = runTraffic(() => clientsAt(1), D, hitters, {
    levels: L,
    cellsPerLevel: M,
    onSecond: (s, l) => {
      if (s !== D) return
      const st = l.telemetry.stats()
      predicted = st.falsePositiveRate
      loadFactor = st.loadFactor
    },
  })
  await limiter.close()
  // near ρ 1 the cells fill for a minute or more: the last 40 s (two generations' seeds, period 100 s)
  const measured = refusedShare(timeline, D - 40, D)
  t.ok(measured > 0.03, `an overload: ${measured}`)
  // the load the cells take: the clients' ρ 1 and the hitters' admitted requests; the hitters'
  // refusals count at most their rate, 1 request/s each (12 / 512 = 0.023), and their admitted
  // requests are fewer than that (their cells are shared)
  t.ok(
    loadFactor >= 0.98 && loadFactor < 1 + (2 * hitters) / M,
    `stats ρ ${loadFactor.toFixed(3)} in [0.98, ${1 + (2 * hitters) / M})`,
  )
  // the model's own figure at ρ 1 without hitters is 1.20–1.44× the measured share (the first
  // test's ρ 1 row, 8 seeds); with the hitters at their rate, 1.38–1.50× over 6 runs (seeds are
  // random): within spec/sizing.md §6's 2×, and above it (the lumped B is an upper bound)
  t.ok(
    predicted >= measured && predicted <= 2 * measured,
    `predicted ${predicted.toExponential(2)}, measured ${measured.toExponential(2)} (stats ρ ${loadFactor.toFixed(3)})`,
  )
})
