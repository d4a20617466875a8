import t from 'tap'
import { execSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { escapeHtml, renderHtml, timeTicks } from '../../src/cli/html.js'
import { autoBinMs } from '../../src/cli/replay-report.js'
import { Replay } from '../../src/cli/replay.js'
import { missingDataReason, repoRoot, sharedData } from './fixtures/shared-data.js'

const clf = (ip: string, hhmmss: string, path = '/') =>
  `${ip} - - [05/Jan/2026:${hhmmss} +0000] "GET ${path} HTTP/1.1" 200 1 "-" "x"`
// Hand-made: rate 1/s, burst 3, one-minute bins.
//  10:00  A ×5 in one second (3 admitted, 2 rejected), B ×1   → bin 0: 4 admitted, 2 rejected
//  10:01  C ×1                                                → bin 1: 1 admitted
//  10:03  D ×2                                                → bin 3: 2 admitted (bin 2 empty: no bar)
const HAND = [
  ...Array.from({ length: 5 }, () => clf('10.0.0.1', '10:00:00')),
  clf('10.0.0.2', '10:00:00'),
  clf('10.0.0.3', '10:01:10'),
  clf('10.0.0.4', '10:03:00'),
  clf('10.0.0.4', '10:03:30'),
]

/** What the tests read of an element's layout (the DOM lib is not in this project's tsconfig). */
interface Laid {
  getBoundingClientRect(): { width: number }
}

/** What the tests read of an SVG element (the DOM lib is not in this project's tsconfig). */
interface Bbox {
  getBBox(): { y: number; height: number }
}

function report(lines: string[], options: ConstructorParameters<typeof Replay>[0]) {
  const r = new Replay(options)
  for (const l of lines) r.line(l)
  const rep = r.finish()
  r.close()
  return rep
}

t.test('the page is self-contained and escapes what comes from the log', async (t) => {
  t.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;')
  const evil = Array.from({ length: 30 }, () => clf('10.6.6.6', '10:00:00', '/<script>alert(1)</script>'))
  const html = renderHtml(report(evil, { key: 'ip+route', ratePerSecond: 1, burst: 3 }), 'x<y>.log')
  t.notMatch(html, /<script>/)
  t.match(html, /10\.6\.6\.6 \/&lt;script&gt;alert\(1\)&lt;\/script&gt;/)
  t.match(html, /x&lt;y&gt;\.log/)
  t.notMatch(html, /<script|<link|src=|@import|url\(/, 'no script and no external asset')
  const hand = renderHtml(report(HAND, { ratePerSecond: 1, burst: 3, binMs: 60_000 }), 'hand.log')
  t.equal(hand.match(/class="bar admitted"/g)?.length, 3)
  t.equal(hand.match(/class="bar rejected"/g)?.length, 1)
})

t.test('the automatic bin follows the data: the smallest round width at which most bins are filled', async (t) => {
  const H = 60
  // traffic in minute :05 of every hour for 84 hours: 5, 10, 15, 30-minute bins are at most
  // half full, hourly bins all full
  const hourly = Array.from({ length: 84 }, (_, h) => h * H + 5)
  t.equal(autoBinMs(hourly), 3_600_000, 'an hourly cron draws one bar per hour')
  // every minute of two hours: one-minute bins
  t.equal(autoBinMs(Array.from({ length: 120 }, (_, m) => m)), 60_000)
  // every minute of ten days: 14,400 one-minute bins, 480 of 30 min (over the 400 cap), 240 of 1 h
  t.equal(autoBinMs(Array.from({ length: 14_400 }, (_, m) => m)), 3_600_000)
  // one request a day for 30 days: no width under a day fills three quarters; a day does
  t.equal(autoBinMs(Array.from({ length: 30 }, (_, d) => d * 1440 + 600)), 86_400_000)
  t.equal(autoBinMs([]), 60_000, 'nothing: one minute')
})

t.test('time ticks fall at round UTC times, at most 8 of them', async (t) => {
  const t0 = Date.UTC(2015, 4, 17, 10, 0) // the access log's first bin, 10:00
  const t1 = Date.UTC(2015, 4, 20, 22, 0)
  const { stepMs, ticks } = timeTicks(t0, t1)
  t.equal(stepMs, 12 * 3_600_000, '3.5 days: every 12 h (6 h would give 14 ticks)')
  t.same(
    ticks.map((x) => new Date(x).toISOString().slice(5, 16)),
    ['05-17T12:00', '05-18T00:00', '05-18T12:00', '05-19T00:00', '05-19T12:00', '05-20T00:00', '05-20T12:00'],
  )
  const odd = timeTicks(Date.UTC(2026, 0, 5, 23, 55), Date.UTC(2026, 0, 6, 13, 46))
  t.equal(odd.stepMs, 3 * 3_600_000)
  t.ok(
    odd.ticks.every((x) => x % odd.stepMs === 0),
    odd.ticks.map((x) => new Date(x).toISOString()).join(),
  )
  const html = renderHtml(report(HAND, { ratePerSecond: 1, burst: 3, binMs: 60_000 }), 'hand.log')
  t.equal(html.match(/class="rejected-mark"/g)?.length, 1, 'the bin with rejections is marked under the axis')
})

// Headless Chromium from Debian's `chromium` package, driven by playwright-core.
let chromium: string | undefined
try {
  chromium = execSync('command -v chromium', { encoding: 'utf8', shell: '/bin/sh' }).trim() || undefined
} catch {
  chromium = undefined
}

// Outside CI a missing chromium skips the test, saying why; under CI it is a failure.
const noChromium =
  chromium === undefined && !process.env.CI
    ? 'chromium not found (`apt-get install -y chromium`; CI installs it): the HTML report is not rendered in a browser'
    : undefined
t.test('the report renders in headless Chromium', { skip: noChromium }, async (t) => {
  t.ok(chromium, 'chromium is installed (required in CI)')
  if (!chromium) return
  const { chromium: pw } = await import('playwright-core')
  const profile = mkdtempSync(join(tmpdir(), 'grudge-chromium-'))
  const artifacts = join(repoRoot, 'test-artifacts')
  mkdirSync(artifacts, { recursive: true })
  const context = await pw.launchPersistentContext(profile, {
    executablePath: chromium,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1040, height: 900 },
  })
  t.teardown(async () => {
    await context.close()
    rmSync(profile, { recursive: true, force: true })
  })
  const page = await context.newPage()
  const requests: string[] = []
  page.on('request', (r) => void requests.push(r.url()))
  const open = async (name: string, html: string) => {
    const file = join(artifacts, `${name}.html`)
    writeFileSync(file, html)
    await page.goto('file://' + file)
    await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true })
  }

  await open('replay-hand', renderHtml(report(HAND, { ratePerSecond: 1, burst: 3, binMs: 60_000 }), 'hand.log'))
  t.equal(await page.locator('svg.timeline rect.bar.admitted').count(), 3, 'one admitted bar per non-empty minute')
  t.equal(await page.locator('svg.timeline rect.bar.rejected').count(), 1)
  const heights = await page.$$eval('svg.timeline rect.bar.admitted', (rs) =>
    rs.map((r) => (r as unknown as Bbox).getBBox().height),
  )
  t.ok(
    Math.abs(heights[0] / heights[1] - 4) < 0.05 && Math.abs(heights[2] / heights[1] - 2) < 0.05,
    `bar heights 4 : 1 : 2 (${heights.join(', ')})`,
  )
  const box = (r: unknown) => {
    const b = (r as Bbox).getBBox()
    return { y: b.y, height: b.height }
  }
  const rejected = await page.$eval('svg.timeline rect.bar.rejected', box)
  const admitted0 = await page.$eval('svg.timeline rect.bar.admitted', box)
  t.ok(Math.abs(rejected.y + rejected.height - admitted0.y) < 0.2, 'rejected stacked on admitted')
  t.ok(Math.abs(rejected.height / heights[1] - 2) < 0.05, '2 rejected')
  t.equal(await page.locator('svg.top-keys rect.key-bar').count(), 1)
  t.equal((await page.locator('table.top td.key').allTextContents()).join(), '10.0.0.1')
  t.same(
    requests.filter((u) => !u.startsWith('file://')),
    [],
    'no request leaves the page',
  )

  const dir = sharedData
  await t.test('the real logs render', { skip: dir === undefined ? missingDataReason : undefined }, async (t) => {
    if (dir === undefined) return
    for (const name of ['access', 'auth'] as const) {
      const text = readFileSync(join(dir, `${name}.log`), 'utf8')
      const rep = report(text.split('\n'), { year: 2026 })
      await open(`replay-${name}`, renderHtml(rep, `${name}.log`))
      const bins = rep.timeline.bins
      t.equal(
        await page.locator('svg.timeline rect.bar.admitted').count(),
        bins.filter((b) => b.admitted > 0).length,
        `${name}: admitted bars`,
      )
      t.equal(
        await page.locator('svg.timeline rect.bar.rejected').count(),
        bins.filter((b) => b.rejected > 0).length,
        `${name}: rejected bars`,
      )
      t.equal(
        await page.locator('svg.timeline rect.rejected-mark').count(),
        bins.filter((b) => b.rejected > 0).length,
        `${name}: every bin with rejections is marked under the axis`,
      )
      const redHeights = await page.$$eval('svg.timeline rect.bar.rejected', (rs) =>
        rs.map((r) => (r as unknown as Bbox).getBBox().height),
      )
      t.ok(
        redHeights.every((h) => h >= 2.9),
        `${name}: rejected segments at least 3 px high (${Math.min(...redHeights)})`,
      )
      const labels = await page.locator('svg.timeline text.tick').allTextContents()
      const timeLabels = labels.filter((l) => /^\d\d[-:]\d\d$/.test(l))
      t.ok(timeLabels.length >= 3, `${name}: time ticks (${timeLabels.join(' ')})`)
      t.ok(
        timeLabels.every((l) => /^\d\d-\d\d$/.test(l) || /^\d\d:00$/.test(l)),
        `${name}: ticks on whole hours or dates`,
      )
      if (name === 'access') {
        // the log's traffic falls in minute :05 of each hour over 84 hours (checked by regex
        // here): hourly bins, every one of them filled, not a comb of 5-minute bars
        t.equal(rep.timeline.binMs, 3_600_000)
        const hours = new Set(
          text
            .split('\n')
            .filter(Boolean)
            .map((l) => /\[(\d\d\/\w{3}\/\d{4}:\d\d)/.exec(l)![1]),
        )
        t.equal(bins.length, hours.size)
        t.equal((bins[bins.length - 1].startMs - bins[0].startMs) / 3_600_000 + 1, hours.size, 'no empty hour')
        const widths = await page.$$eval('svg.timeline rect.bar.admitted', (rs) =>
          rs.map((r) => (r as unknown as Laid).getBoundingClientRect().width),
        )
        t.ok(Math.min(...widths) >= 5, `bars are wide enough to see (${Math.min(...widths).toFixed(1)} px)`)
      }
      const width = await page.$eval('svg.timeline', (s) => (s as unknown as Laid).getBoundingClientRect().width)
      t.ok(width > 900, 'the chart is laid out')
    }
  })
})
