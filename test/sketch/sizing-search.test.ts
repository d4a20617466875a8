import t from 'tap'
import {
  abuseFalseBlockRate,
  debtMeterCellsForLoad,
  debtMeterLoadFactor,
  fairnessFalseThrottleRate,
  scoreCellsForLoad,
  sketchFalsePositiveRate,
  type DebtMeterLoad,
  type ScoreLoad,
  type SketchSize,
} from '../../src/sketch/sizing.js'

// The sizers' search from below (galloping, with the load-factor cap skipped and a memo of exact
// loads) must give the answer of the bisection it replaced. The reference here is that bisection
// as it stood (sizing.ts before 2026-12-03), over the public rate functions: it probed maxCells
// first, then bisected the exponents from the largest shapes down.
function bisectionCells(
  levels: number,
  target: number,
  lo: number,
  hi: number,
  rateAt: (shape: SketchSize) => number,
): number {
  let a = Math.log2(lo)
  let b = Math.log2(hi)
  if (rateAt({ levels, cellsPerLevel: 2 ** b }) > target) return hi
  while (a < b) {
    const m = (a + b) >> 1
    if (rateAt({ levels, cellsPerLevel: 2 ** m }) <= target) b = m
    else a = m + 1
  }
  return 2 ** a
}

function referenceDebtCells(load: DebtMeterLoad, levels: number, target: number, lo: number, hi: number, cap: number) {
  const rps = load.requestsPerSecond ?? 0
  const rate = load.rate ?? 1
  const cost = load.cost ?? 1
  const hot = load.hotKeys ?? 0
  return bisectionCells(levels, target, lo, hi, (shape) =>
    debtMeterLoadFactor(shape.cellsPerLevel, rps, rate, cost, hot) > cap ? 1 : sketchFalsePositiveRate(shape, load),
  )
}

t.test('debtMeterCellsForLoad gives the bisection answer on a grid of loads', async (t) => {
  let cases = 0
  const answers = new Set<number>()
  for (const rps of [0, 1e-3, 0.03, 1, 40, 5000, 2e5])
    for (const [burst, generations] of [
      [1, undefined],
      [2, 2],
      [20, 2],
    ] as const)
      for (const levels of [1, 2, 4])
        for (const [target, cap, hotKeys] of [
          [1e-5, 0.05, 0],
          [1e-2, 1, 0],
          [1e-3, 1, 30],
        ] as const) {
          const load: DebtMeterLoad = { requestsPerSecond: rps, rate: 1, burst, hotKeys, generations }
          const want = referenceDebtCells(load, levels, target, 16, 2 ** 30, cap)
          const opts = { levels, targetFalseReject: target, minCells: 16, maxCells: 2 ** 30, maxLoadFactor: cap }
          const got = debtMeterCellsForLoad(load, opts)
          // asked again: the memo's answer
          const again = debtMeterCellsForLoad({ ...load }, { ...opts })
          cases++
          answers.add(got)
          if (got !== want || again !== want)
            t.fail(`rps ${rps} burst ${burst} N ${generations} L ${levels} target ${target} cap ${cap} H ${hotKeys}`, {
              got,
              again,
              want,
            })
        }
  t.pass(`${cases} loads agree`)
  // the grid spans the range, so the comparison is not of one constant answer
  t.ok(
    answers.has(16) && answers.has(2 ** 30) && answers.size >= 8,
    `answers ${[...answers].sort((a, b) => a - b).join(', ')}`,
  )
})

t.test('debtMeterCellsForLoad: a narrow range, and maxCells unmet', async (t) => {
  for (const [lo, hi] of [
    [16, 16],
    [64, 1024],
    [1, 1 << 24],
  ])
    for (const rps of [0, 0.5, 50, 1e6]) {
      const load = { requestsPerSecond: rps, rate: 1, burst: 3, generations: 2 }
      t.equal(
        debtMeterCellsForLoad(load, { levels: 3, minCells: lo, maxCells: hi }),
        referenceDebtCells(load, 3, 1e-5, lo, hi, 1),
        `[${lo}, ${hi}] rps ${rps}`,
      )
    }
  // more load than 2^24 cells can drain below the target: maxCells, as before
  t.equal(debtMeterCellsForLoad({ requestsPerSecond: 1e9, rate: 1, burst: 2 }, { levels: 2 }), 1 << 24)
})

t.test('scoreCellsForLoad gives the bisection answer on a grid of loads', async (t) => {
  let cases = 0
  const answers = new Set<number>()
  for (const events of [0, 1e-3, 3, 2000, 1e5])
    for (const levels of [1, 2, 4])
      for (const target of [1e-5, 1e-2]) {
        const abuse: ScoreLoad = { eventsPerSecond: events, weight: 1, lambdaPerSecond: Math.LN2 / 600, maxScore: 20 }
        const fair: ScoreLoad = { eventsPerSecond: events, weight: 0.1, lambdaPerSecond: 0.1, maxScore: 1 }
        const opts = { levels, targetFalseReject: target, minCells: 16, maxCells: 2 ** 30 }
        const wantA = bisectionCells(levels, target, 16, 2 ** 30, (s) => abuseFalseBlockRate(s, abuse, 5))
        const wantF = bisectionCells(levels, target, 16, 2 ** 30, (s) => fairnessFalseThrottleRate(s, fair))
        const gotA = scoreCellsForLoad(abuse, { ...opts, threshold: 5 })
        const gotF = scoreCellsForLoad(fair, opts)
        cases += 2
        answers.add(gotA).add(gotF)
        if (gotA !== wantA) t.fail(`abuse events ${events} L ${levels} target ${target}`, { gotA, wantA })
        if (gotF !== wantF) t.fail(`fairness events ${events} L ${levels} target ${target}`, { gotF, wantF })
        // the memo keys on the threshold: the same load without it is the fairness question
        t.equal(
          scoreCellsForLoad(abuse, opts),
          bisectionCells(levels, target, 16, 2 ** 30, (s) => fairnessFalseThrottleRate(s, abuse)),
        )
      }
  t.pass(`${cases} loads agree`)
  t.ok(answers.has(16) && answers.size >= 6, `answers ${[...answers].sort((a, b) => a - b).join(', ')}`)
})

t.test('the memo never answers for options that are not checked', async (t) => {
  const load = { requestsPerSecond: 3, rate: 1, burst: 5 }
  t.equal(debtMeterCellsForLoad(load, { levels: 4 }), referenceDebtCells(load, 4, 1e-5, 16, 1 << 24, 1))
  // the same figures spelled wrongly are refused, although the memo holds their key's answer
  for (const bad of [{ levels: '4' }, { levels: 4, targetFalseReject: '1e-5' }, { levels: 4, maxCells: 100 }])
    t.throws(
      () => debtMeterCellsForLoad(load, bad as never),
      { code: 'ERR_GRUDGE_SIZING_INVALID' },
      JSON.stringify(bad),
    )
  t.throws(() => debtMeterCellsForLoad(load, undefined as never), { code: 'ERR_GRUDGE_SIZING_INVALID' })
  const score = { eventsPerSecond: 3, weight: 1, lambdaPerSecond: 0.01, maxScore: 40 }
  scoreCellsForLoad(score, { levels: 4, threshold: 10 })
  t.throws(() => scoreCellsForLoad(score, { levels: '4', threshold: 10 } as never), {
    code: 'ERR_GRUDGE_SIZING_INVALID',
  })
  // another target is another answer, not the memo's
  t.not(
    debtMeterCellsForLoad({ requestsPerSecond: 300, rate: 1, burst: 2 }, { levels: 2, targetFalseReject: 0.5 }),
    debtMeterCellsForLoad({ requestsPerSecond: 300, rate: 1, burst: 2 }, { levels: 2, targetFalseReject: 1e-6 }),
  )
})
