// Several grudge limiters on one request (spec/http.md §3.1): stacked Express middleware list
// one member per policy in RateLimit-Policy and RateLimit instead of overwriting each other.
import t, { type Test } from 'tap'
import express from 'express'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { request } from 'undici'
import grudge from '../../plugins/express/index.js'
import { FieldStack, type FieldWriter } from '../../src/http/field-stack.js'
import { fieldSource, rateLimitHeaders } from '../../src/http/headers.js'
import { Limiter } from '../../src/limit/limiter.js'
import { unlimitedDecision } from '../../src/limit/decision.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

const express4 = createRequire(import.meta.url)('express4') as typeof express

// ---- a small RFC 9651 List parser: items of sf-string, token, integer or boolean, with parameters

type Bare = string | number | boolean | { token: string }
interface Item {
  value: Bare
  params: Record<string, Bare>
}

function parseList(field: string): Item[] {
  let i = 0
  const s = field
  const fail = (what: string): never => {
    throw new Error(`not an sf-list (${what} at ${i}): ${field}`)
  }
  const sp = () => {
    while (s[i] === ' ') i++
  }
  const ows = () => {
    while (s[i] === ' ' || s[i] === '\t') i++
  }
  const key = (): string => {
    if (!/[a-z*]/.test(s[i] ?? '')) fail('key')
    const m = /^[a-z0-9_\-.*]+/.exec(s.slice(i))!
    i += m[0].length
    return m[0]
  }
  const bare = (): Bare => {
    const c = s[i]
    if (c === '"') {
      let out = ''
      i++
      for (;;) {
        const ch = s[i++]
        if (ch === undefined) fail('unterminated string')
        if (ch === '\\') {
          const e = s[i++]
          if (e !== '"' && e !== '\\') fail('escape')
          out += e
        } else if (ch === '"') return out
        else if (ch < ' ' || ch > '~') fail('string character')
        else out += ch
      }
    }
    if (c === '?') {
      i++
      const b = s[i++]
      if (b !== '0' && b !== '1') fail('boolean')
      return b === '1'
    }
    if (c === '-' || /[0-9]/.test(c ?? '')) {
      const m = /^-?[0-9]{1,15}/.exec(s.slice(i))
      if (m === null) fail('integer')
      i += m![0].length
      if (s[i] === '.') fail('decimal (not expected here)')
      return Number(m![0])
    }
    if (/[A-Za-z*]/.test(c ?? '')) {
      const m = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*/.exec(s.slice(i))!
      i += m[0].length
      return { token: m[0] }
    }
    return fail('bare item')
  }
  const params = (): Record<string, Bare> => {
    const p: Record<string, Bare> = {}
    while (s[i] === ';') {
      i++
      sp()
      const k = key()
      if (s[i] === '=') {
        i++
        p[k] = bare()
      } else p[k] = true
    }
    return p
  }
  const out: Item[] = []
  sp()
  if (i === s.length) return out
  for (;;) {
    if (s[i] === '(') fail('inner list')
    out.push({ value: bare(), params: params() })
    ows()
    if (i === s.length) return out
    if (s[i] !== ',') fail('comma')
    i++
    ows()
    if (i === s.length) fail('trailing comma')
  }
}

/** The members of a RateLimit(-Policy) field by name; duplicate names fail the test. */
function members(t: Test, field: unknown): Map<string, Record<string, Bare>> {
  t.type(field, 'string', 'field present')
  const m = new Map<string, Record<string, Bare>>()
  for (const it of parseList(field as string)) {
    t.type(it.value, 'string', 'a policy name is an sf-string')
    t.notOk(m.has(it.value as string), `policy name ${JSON.stringify(it.value)} unique in the field`)
    m.set(it.value as string, it.params)
  }
  return m
}

t.test('the test parser reads RFC 9651 lists and refuses what is not one', async (t) => {
  t.same(parseList('"a";q=1;w=2, "b\\"c";r=0, tok;x, ?1, -3'), [
    { value: 'a', params: { q: 1, w: 2 } },
    { value: 'b"c', params: { r: 0 } },
    { value: { token: 'tok' }, params: { x: true } },
    { value: true, params: {} },
    { value: -3, params: {} },
  ])
  t.same(parseList(''), [])
  for (const bad of ['"a",', '"a" "b"', '"a', '"a";Q=1', '(1 2)', '1.5', '"a\\n"', '?2', '"a";q=@'])
    t.throws(() => parseList(bad), bad)
})

// ---- Express end to end

type Hit = { status: number; headers: Record<string, string | string[] | undefined>; body: string }

async function serve(t: Test, app: express.Express): Promise<string> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  )
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function hit(url: string, headers: Record<string, string> = {}): Promise<Hit> {
  const r = await request(url, { headers })
  return { status: r.statusCode, headers: r.headers, body: await r.body.text() }
}

for (const [label, make] of [
  ['express 5', express],
  ['express 4', express4],
] as const) {
  t.test(`${label}: a global per-IP limit and a per-route per-key limit list both policies`, async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const app = make()
    const perIp = grudge({ clock, ticker, limit: { rate: 100 / 60, burst: 100 } })
    const perKey = grudge({
      clock,
      ticker,
      name: 'per-key',
      key: (req) => String(req.headers['x-api-key'] ?? ''),
      limit: { rate: 0.5, burst: 3 },
    })
    t.teardown(() => Promise.all([perIp.close(), perKey.close()]).then(() => undefined))
    app.use(perIp)
    app.get('/api', perKey, (req, res) => {
      res.send(req.grudge?.key)
    })
    app.get('/other', (_req, res) => {
      res.send('other')
    })
    const url = await serve(t, app)

    const ok = await hit(url + '/api', { 'x-api-key': 'k1' })
    t.equal(ok.status, 200)
    t.equal(ok.body, 'fn:k1', 'req.grudge is the last decision')
    t.equal(ok.headers['ratelimit-policy'], '"default";q=100;w=60, "per-key";q=3;w=6')
    t.equal(ok.headers['ratelimit'], '"default";r=99;t=1, "per-key";r=2;t=2')
    const policy = members(t, ok.headers['ratelimit-policy'])
    t.same([...policy.keys()], ['default', 'per-key'], 'in the order the middleware ran')
    t.same(policy.get('default'), { q: 100, w: 60 })
    t.same(policy.get('per-key'), { q: 3, w: 6 })
    const state = members(t, ok.headers['ratelimit'])
    t.same(state.get('default'), { r: 99, t: 1 })
    t.same(state.get('per-key'), { r: 2, t: 2 })
    t.equal(ok.headers['retry-after'], undefined)

    const alone = await hit(url + '/other')
    t.equal(alone.headers['ratelimit'], '"default";r=98;t=2', 'one middleware: its fields as before')

    await hit(url + '/api', { 'x-api-key': 'k1' })
    await hit(url + '/api', { 'x-api-key': 'k1' })
    const denied = await hit(url + '/api', { 'x-api-key': 'k1' })
    t.equal(denied.status, 429, 'the second middleware denies')
    t.equal(denied.headers['retry-after'], '2')
    const deniedState = members(t, denied.headers['ratelimit'])
    t.same(deniedState.get('per-key'), { r: 0, t: 2 }, 't of the denying policy equals Retry-After')
    t.same(deniedState.get('default'), { r: 95, t: 3 }, 'the global policy is still listed')
    t.same([...members(t, denied.headers['ratelimit-policy']).keys()], ['default', 'per-key'])
    t.match(JSON.parse(denied.body), { statusCode: 429, message: /retry in 2 seconds/ })

    const other = await hit(url + '/api', { 'x-api-key': 'k2' })
    t.equal(other.status, 200, 'another key has its own per-key budget')
  })
}

t.test('two unnamed middleware: the second is listed under its limiter name, never a second "default"', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const app = express()
  const a = grudge({ clock, ticker, limit: { rate: 1, burst: 10 } })
  const b = grudge({ clock, ticker, limit: { rate: 1, burst: 5 } })
  const c = grudge({ clock, ticker, limit: { rate: 1, burst: 2 } })
  t.teardown(() => Promise.all([a.close(), b.close(), c.close()]).then(() => undefined))
  app.get('/', a, b, c, (_req, res) => {
    res.send('ok')
  })
  const url = await serve(t, app)
  const r = await hit(url + '/')
  const policy = members(t, r.headers['ratelimit-policy'])
  const names = [...policy.keys()]
  t.equal(names.length, 3)
  t.equal(names[0], 'default')
  t.match(names[1], /^express:\d+$/)
  t.match(names[2], /^express:\d+$/)
  t.same(
    [...policy.values()].map((p) => p.q),
    [10, 5, 2],
  )
  t.same([...members(t, r.headers['ratelimit']).keys()], names, 'both fields name the same policies')
  t.same(
    [...members(t, (await hit(url + '/')).headers['ratelimit-policy']).keys()],
    names,
    'the same names on every request',
  )
})

t.test('an explicit name given twice: the later member replaces the earlier one', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const app = express()
  const a = grudge({ clock, ticker, limit: { rate: 1, burst: 10, name: 'api' } })
  const b = grudge({ clock, ticker, limit: { rate: 1, burst: 5, name: 'api' } })
  const c = grudge({ clock, ticker, name: 'burst', limit: { rate: 1, burst: 3 } })
  const d = grudge({ clock, ticker, limit: { rate: 2, burst: 4 } })
  const e = grudge({ clock, ticker, limit: { rate: 2, burst: 4, name: 'default' } })
  t.teardown(() => Promise.all([a, b, c, d, e].map((m) => m.close())).then(() => undefined))
  app.get('/same', a, b, (_req, res) => {
    res.send('ok')
  })
  app.get('/named', c, a, (_req, res) => {
    res.send('ok')
  })
  app.get('/default', d, e, (_req, res) => {
    res.send('ok')
  })
  const url = await serve(t, app)
  const same = await hit(url + '/same')
  t.equal(same.headers['ratelimit-policy'], '"api";q=5;w=5')
  t.equal(same.headers['ratelimit'], '"api";r=4;t=1')
  const named = await hit(url + '/named')
  t.equal(named.headers['ratelimit-policy'], '"burst";q=3;w=3, "api";q=10;w=10', 'the middleware name names the policy')
  t.equal(
    (await hit(url + '/default')).headers['ratelimit-policy'],
    '"default";q=4;w=2',
    'limit.name "default" given explicitly replaces the defaulted one',
  )
})

t.test('one middleware mounted twice on a path is listed once and charged once', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const app = express()
  const a = grudge({ clock, ticker, limit: { rate: 1, burst: 10 } })
  t.teardown(() => a.close())
  app.use(a)
  app.get('/', a, (_req, res) => {
    res.send('ok')
  })
  const url = await serve(t, app)
  const r = await hit(url + '/')
  t.equal(r.headers['ratelimit-policy'], '"default";q=10;w=10')
  t.equal(r.headers['ratelimit'], '"default";r=9;t=1', 'charged once (the second mount steps aside), listed once')
})

t.test('legacy X-RateLimit-*: the tightest policy; on a denial the denying one; Retry-After the largest', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const app = express()
  // `handler` calling next() lets a denied request reach the next limiter (express-rate-limit style)
  const through = (_req: express.Request, _res: express.Response, next: express.NextFunction) => next()
  const wide = grudge({ clock, ticker, name: 'wide', legacyHeaders: true, limit: { rate: 1, burst: 10 } })
  const slow = grudge({
    clock,
    ticker,
    name: 'slow',
    legacyHeaders: true,
    handler: through,
    limit: { rate: 0.1, burst: 2 },
  })
  const fast = grudge({ clock, ticker, name: 'fast', legacyHeaders: true, limit: { rate: 1, burst: 2 } })
  t.teardown(() => Promise.all([wide, slow, fast].map((m) => m.close())).then(() => undefined))
  app.get('/', wide, slow, fast, (_req, res) => {
    res.send('ok')
  })
  const url = await serve(t, app)
  const first = await hit(url + '/')
  t.equal(first.headers['ratelimit'], '"wide";r=9;t=1, "slow";r=1;t=10, "fast";r=1;t=1')
  t.equal(first.headers['x-ratelimit-limit'], '2', 'fewest remaining (1), then the longer reset: slow')
  t.equal(first.headers['x-ratelimit-remaining'], '1')
  t.equal(first.headers['x-ratelimit-reset'], '10')
  await hit(url + '/')
  const third = await hit(url + '/')
  t.equal(third.status, 429, 'slow denied (handler passed it on), then fast denied')
  t.equal(third.headers['retry-after'], '10', 'the larger of the two waits (slow 10 s, fast 1 s)')
  t.equal(third.headers['ratelimit'], '"wide";r=7;t=3, "slow";r=0;t=10, "fast";r=0;t=1')
  t.equal(third.headers['x-ratelimit-remaining'], '0')
  t.equal(third.headers['x-ratelimit-reset'], '10', 'a denying policy, the one with the longer wait')
  t.equal(third.headers['x-ratelimit-limit'], '2')
})

t.test('stacks with headers: false and with a policy that has no figures', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const app = express()
  const quiet = grudge({ clock, ticker, headers: false, limit: { rate: 1, burst: 10 } })
  const abuse = grudge({ clock, ticker, abuse: { weights: { 401: 1 }, threshold: 0.5, halfLifeMs: 5000 } })
  const meter = grudge({ clock, ticker, limit: { rate: 1, burst: 5 } })
  t.teardown(() => Promise.all([quiet, abuse, meter].map((m) => m.close())).then(() => undefined))
  app.get('/q', quiet, meter, (_req, res) => {
    res.send('ok')
  })
  app.get('/a', meter, abuse, (req, res) => {
    res.status(req.query.bad ? 401 : 200).send('ok')
  })
  app.get('/qq', quiet, abuse, quiet, (_req, res) => {
    res.send('ok')
  })
  const url = await serve(t, app)
  t.equal((await hit(url + '/q')).headers['ratelimit'], '"default";r=4;t=1', 'headers: false adds nothing')
  const qq = await hit(url + '/qq')
  t.equal(qq.headers['ratelimit'], undefined, 'no figures at all: no field')
  t.equal(qq.headers['retry-after'], undefined)
  await hit(url + '/a?bad=1')
  const blocked = await hit(url + '/a')
  t.equal(blocked.status, 403)
  // score 1 at threshold 0.5 halves to exactly 0.5 at 5,000 ms, still blocked (score ≥ threshold):
  // the first ms below is 5,001, sent in whole seconds as 6
  t.equal(blocked.headers['retry-after'], '6', 'the abuse denial sets Retry-After')
  t.equal(blocked.headers['ratelimit'], '"default";r=2;t=3', "the meter's member stays")
})

// ---- the stack without a server

function capture(): FieldWriter & { fields: Map<string, string> } {
  const fields = new Map<string, string>()
  return {
    fields,
    setHeader: (n, v) => fields.set(n, v),
    removeHeader: (n) => fields.delete(n),
  }
}

t.test(
  'FieldStack: a member withdrawn (the same limiter failing open on its second run) clears its fields',
  async (t) => {
    const ticker = new FakeTicker()
    const clock = new FakeClock(0)
    const l = new Limiter({ clock, ticker, limit: { rate: 1, burst: 4 } })
    t.teardown(() => l.close())
    const src = fieldSource(l, { legacy: true }, true)
    const first = l.decide('k')
    if (first instanceof Promise) throw new Error('sync')
    const out = capture()
    const h = rateLimitHeaders(src, first)
    for (const n in h) out.setHeader(n, h[n])
    const stack = new FieldStack(src, first)
    const open = unlimitedDecision() // the same limiter failing open: admitted, no figures
    stack.add(src, open)
    stack.write(out)
    t.same([...out.fields.keys()], [], 'no member left: RateLimit and X-RateLimit-* removed, nothing invented')
    stack.write(out)
    t.same([...out.fields.keys()], [])
  },
)

t.test('FieldStack: an implicit name whose fallback is taken too is numbered, never replacing a member', async (t) => {
  const ticker = new FakeTicker()
  const clock = new FakeClock(0)
  const a = new Limiter({ clock, ticker, limit: { rate: 1, burst: 4 } })
  const b = new Limiter({ clock, ticker, name: 'x', limit: { rate: 1, burst: 4, name: 'x' } })
  const c = new Limiter({ clock, ticker, name: 'x', limit: { rate: 1, burst: 2 } })
  t.teardown(() => Promise.all([a.close(), b.close(), c.close()]).then(() => undefined))
  const decide = (l: Limiter) => {
    const d = l.decide('k')
    if (d instanceof Promise) throw new Error('sync')
    return d
  }
  const stack = new FieldStack(fieldSource(a, {}, true), decide(a))
  stack.add(fieldSource(b, {}, false), decide(b))
  stack.add(fieldSource(c, {}, true), decide(c))
  const out = capture()
  stack.write(out)
  t.equal(out.fields.get('ratelimit-policy'), '"default";q=4;w=4, "x";q=4;w=4, "x#3";q=2;w=2')
})
