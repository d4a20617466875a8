/**
 * The plugin's hooks: the onRequest hook that limits (derive the key, check the allow list,
 * call the core once, write the fields, answer a denial), the Bloom pre-check, and the
 * onResponse hook that records outcomes. The steps of the onRequest hook are module
 * functions, so the synchronous path allocates no closures.
 * @module
 */
import type { FastifyReply, FastifyRequest, onRequestHookHandler, preHandlerHookHandler } from 'fastify'
import { invalidOption } from '../../src/errors.js'
import { checkKnownOptions } from '../../src/options.js'
import { decisionOf, unlimitedDecision, type Decision, type DecisionFigures } from '../../src/limit/decision.js'
import type { Limiter } from '../../src/limit/limiter.js'
import type { Telemetry } from '../../src/limit/telemetry.js'
import { BloomGate } from '../../src/limit/bloom-gate.js'
import { deriveKey, type RequestView } from '../../src/http/client-key.js'
import { isAllowed } from '../../src/http/allow-list.js'
import { outcomeOf } from '../../src/http/outcome.js'
import {
  cachedDefaultBody,
  defaultDenialError,
  errorContext,
  notFoundBody,
  requestError,
} from '../../src/http/error-body.js'
import { isThenable } from '../../src/http/thenable.js'
import { firstReport } from '../../src/http/options.js'
import { tierThenCharge, type ChargeSteps } from '../../src/http/charge.js'
import { denialStatus } from '../../src/http/status.js'
import { fieldSource, writeRateLimitFields, type FieldSource } from '../../src/http/headers.js'
import { FieldStack, type FieldWriter } from '../../src/http/field-stack.js'
import { tierFieldSources } from '../../src/http/tier-fields.js'
import { debtHighBits, debtLowBits, keepable, keepTier, keptDecisionOf } from '../../src/http/request-figures.js'
import type { KeyOps } from '../../src/http/key-ops.js'
import type { AdapterConfig } from '../../src/http/options.js'
import type { BloomRegistryLike } from '../../src/http/bloom-registry.js'
import { FASTIFY_BLOOM_ROUTE_KEYS, type FastifyBloomRouteOptions, type GrudgeRequestState } from './options.js'

/** Parsed options of the plugin, a route or a hook. */
export type FastifyConfig = AdapterConfig<FastifyRequest, FastifyReply>

/** Marks a hook as one of this plugin instance's: an inner registration strips it from a route. */
export const kOwner = Symbol('grudge.owner')
/** Marks a hook from `fastify.grudge.hook()`: put on a route by the user, never stripped. */
export const kManual = Symbol('grudge.manual')
/** A hook with grudge's marks. */
export type Tagged = ((...args: never[]) => unknown) & { [kOwner]?: symbol; [kManual]?: true }

/** What one plugin instance shares between its routes, hooks and decorator. */
export interface PluginScope {
  /** This instance's mark on its hooks. */
  readonly owner: symbol
  /** The instance's counters. */
  readonly telemetry: Telemetry
  /** The registry of the `bloom` route option, if any. */
  readonly bloomRegistry: BloomRegistryLike | undefined
  /** `req.grudge.bloom(name)` and `fastify.grudge.bloom(name)`. */
  readonly bloomOf: (name: string) => unknown
  /** Every limiter built, closed on server close. */
  readonly limiters: Limiter[]
  /** The onResponse hook recording outcomes, marked as this instance's. */
  readonly onResponse: Tagged
  /** The plugin's reads of a request (its client address warns once when missing). */
  readonly view: RequestView<FastifyRequest>
  /** The onRequestAbort hook recording the outcome of an aborted request, marked as this instance's. */
  readonly onRequestAbort: Tagged
  /** The key operations of each route's own limiter, by the limiter's name (`fastify.grudge.route(name)`). */
  readonly routeOps: Map<string, KeyOps<FastifyRequest>>
}

/**
 * The reads of a request for one plugin instance. A request without a client address
 * (`request.ip` undefined: a socket already gone, a custom server) is keyed `ip:`, one
 * bucket shared by every such request; the first one is logged, once per instance.
 */
export function fastifyView(log: { warn(msg: string): void }): RequestView<FastifyRequest> {
  let warned = false
  return {
    ip: (req) => {
      const ip = req.ip
      if (ip !== undefined && ip !== '') return ip
      if (!warned) {
        warned = true
        log.warn(
          "grudge: a request has no client address (request.ip is undefined); such requests share the key 'ip:' (one budget). Check trustProxy, or key by something else (key option)",
        )
      }
      return ''
    },
    method: (req) => req.method,
    route: (req) => req.routeOptions?.url,
    header: (req, name) => {
      const v = req.headers[name]
      return Array.isArray(v) ? v[0] : v
    },
  }
}

interface PerRequest {
  key: string
  startMs: number
  limiter: Limiter
  config: FastifyConfig
  /** The reply (the outcome rules read it; an aborted request has no response of its own). */
  reply: FastifyReply
  /** The outcome record of an earlier limiter of a stack, if it records outcomes too. */
  prev: PerRequest | undefined
}

/** A request decided by several limiters: which ones (each decides once), and their merged fields. */
interface StackState {
  readonly limiters: Limiter[]
  readonly fields: FieldStack
  readonly writer: FieldWriter
}

/*
 * What grudge keeps of a request. The single-policy path (one limiter decides, the debt
 * meter alone admits) keeps four slots declared on Fastify's request class (decorateRequest:
 * 8 B each in every request object): the request key, the hook context of the first
 * limiter that decided, and the two 32-bit halves of the kept debt (small integers: no box);
 * a fifth holds the first limiter's Decision when it cannot be kept as figures (a denial,
 * several policies), 40 B in all.
 * They were WeakMap entries, which cost no bytes of the request but ~0.2 µs of CPU per fresh
 * request each (an identity hash, an ephemeron-table insert, the scavenger's ephemeron pass;
 * measured through Fastify: 3 sets per request, ~40 % of grudge's own profile). The rarer
 * states (a Decision built from figures or set, a stack of limiters, pending outcomes, a tier) stay in
 * WeakMaps keyed by the request, whose values never refer to the request. A young string as
 * a WeakMap value would outlive its request by a scavenge (src/http/request-figures.ts:
 * +4 scavenges per 80 000 requests), which is why the key always had a slot.
 */
/** The request key of the kept figures (a slot of Fastify's request class, default ''). */
export const kKey = Symbol('grudge.key')
/** The hook context of the first grudge limiter that decided the request (a slot, default null). */
export const kFirst = Symbol('grudge.first')
/**
 * The Decision of the first limiter's decision when its figures cannot be kept (a denial,
 * several policies): a slot, default null. A WeakMap entry here cost ~2 µs of CPU per
 * refused request through Fastify (the ephemeron insert for a fresh request, a young value
 * kept one scavenge longer; measured by server CPU per request, provisional).
 */
export const kDecided = Symbol('grudge.decided')
/** The high 32 bits of the kept debt's IEEE 754 bits (a slot, default 0). */
export const kDebtHigh = Symbol('grudge.debtHigh')
/** The low 32 bits of the kept debt's IEEE 754 bits (a slot, default 0). */
export const kDebtLow = Symbol('grudge.debtLow')
type Keyed = FastifyRequest & {
  [kKey]: string
  [kFirst]: HookContext | null | undefined
  [kDecided]: GrudgeRequestState | null | undefined
  [kDebtHigh]: number
  [kDebtLow]: number
}
/** The hook context of the first limiter that decided the request, or undefined. */
function firstOf(req: FastifyRequest): HookContext | undefined {
  // undefined as well as null: a request of a scope built before the slots were declared has none
  return (req as Keyed)[kFirst] ?? undefined
}
/** The limiters and merged fields of a request decided by more than one limiter. */
const STACKS = new WeakMap<FastifyRequest, StackState>()
/** The request's pending outcomes (limiters that record outcomes only). */
const STATES = new WeakMap<FastifyRequest, PerRequest>()
/** `request.grudge` once built, decided as a Decision, or set; absent while only the figures are kept. */
const DECISIONS = new WeakMap<FastifyRequest, unknown>()

/**
 * `request.grudge`: the Decision of the last grudge limiter that decided the request (with
 * its key and `bloom(name)`), or null. A request that one debt meter alone admitted keeps
 * only its figures (src/http/request-figures.ts); the Decision is built from them the first
 * time this is read, and then kept. Set to null, it is built again from the figures.
 */
export function requestGrudge(req: FastifyRequest): GrudgeRequestState | null {
  const d = DECISIONS.get(req)
  if (d !== null && (d !== undefined || DECISIONS.has(req))) return d as GrudgeRequestState
  const first = firstOf(req)
  if (first === undefined) return null
  const decided = (req as Keyed)[kDecided]
  if (decided !== null && decided !== undefined) return decided
  const state = keptDecisionOf(
    req,
    first.limiter,
    (req as Keyed)[kDebtHigh],
    (req as Keyed)[kDebtLow],
  ) as GrudgeRequestState
  state.key = (req as Keyed)[kKey]
  state.bloom = first.bloomOf
  DECISIONS.set(req, state)
  return state
}

/**
 * Set `request.grudge` of a request (the decorator's setter).
 * @param req the request
 * @param value what `request.grudge` reads from now on (null: built again from the figures)
 */
export function setRequestGrudge(req: FastifyRequest, value: unknown): void {
  DECISIONS.set(req, value)
}

/** A Decision of this context's limiter as `request.grudge`. */
function requestState(ctx: HookContext, d: Decision, key: string): GrudgeRequestState {
  const state = d as GrudgeRequestState
  state.key = key
  state.bloom = ctx.bloomOf
  return state
}
type Next = (err?: Error) => void

interface HookContext {
  view: RequestView<FastifyRequest>
  config: FastifyConfig
  limiter: Limiter
  fields: FieldSource
  /** A tiered limit's field source per tier (each tier has its own quota and window), else undefined. */
  tierFields: ReadonlyMap<string, FieldSource> | undefined
  bloomOf: (name: string) => unknown
}

const NO_RECORD = Object.freeze({
  key: '',
  startMs: 0,
  limiter: undefined,
  config: undefined,
  reply: undefined,
  prev: undefined,
}) as unknown as PerRequest

/** Whether a limiter has already decided this request (a hook of the same limiter placed twice charges once). */
function decidedBy(req: FastifyRequest, limiter: Limiter): boolean {
  const first = firstOf(req)
  if (first === undefined) return false
  if (first.limiter === limiter) return true
  const st = STACKS.get(req)
  return st !== undefined && st.limiters.includes(limiter)
}

/** The field source of a decision of this context's limiter: its tier's for a tiered limit. */
function fieldsOf(ctx: HookContext, tier: string | undefined): FieldSource {
  return tier !== undefined && ctx.tierFields !== undefined ? (ctx.tierFields.get(tier) ?? ctx.fields) : ctx.fields
}

/**
 * Record the decision as `request.grudge` and write its fields: for the first limiter its
 * figures are kept in the request's slots when they can be (no allocation) and its fields
 * written as they are; a later limiter's Decision is built at once and its fields merged.
 */
function decided(
  ctx: HookContext,
  req: FastifyRequest,
  reply: FastifyReply,
  key: string,
  f: DecisionFigures,
): Decision | undefined {
  const first = firstOf(req)
  if (first === undefined) {
    const slots = req as Keyed
    slots[kFirst] = ctx
    let d: GrudgeRequestState | undefined
    if (keepable(f)) {
      slots[kKey] = key
      slots[kDebtHigh] = debtHighBits(f.debt)
      slots[kDebtLow] = debtLowBits(f.debt)
      if (f.tier !== undefined) keepTier(req, f.tier)
    } else slots[kDecided] = d = requestState(ctx, decisionOf(f), key)
    // a value set before this decision (request.grudge = x in an earlier hook) yields to it
    DECISIONS.delete(req)
    writeRateLimitFields(reply, setReplyHeader, fieldsOf(ctx, f.tier), f)
    return d
  }
  // the earlier limiters' Decision, before this one replaces it as request.grudge
  const prev = requestGrudge(req)!
  const d = requestState(ctx, decisionOf(f), key)
  DECISIONS.set(req, d)
  let st = STACKS.get(req)
  if (st === undefined) {
    st = {
      limiters: [first.limiter],
      fields: new FieldStack(fieldsOf(first, prev.tier), prev),
      writer: {
        setHeader: (n, v) => reply.header(n, v),
        removeHeader: (n) => reply.removeHeader(n),
      },
    }
    STACKS.set(req, st)
  }
  st.limiters.push(ctx.limiter)
  st.fields.add(fieldsOf(ctx, d.tier), d)
  st.fields.write(st.writer)
  return d
}

/** The error of an `errorResponseBuilder` that gave nothing to throw (`useErrorHandler`). */
export function nothingThrown(config: FastifyConfig, thrown: unknown): unknown {
  try {
    invalidOption(config.prefix + 'errorResponseBuilder', 'a value to throw (useErrorHandler is set)', thrown)
  } catch (err) {
    return err
  }
}

/** Send a request-time failure down Fastify's error path: logged under grudge's name, generic to the client. */
function fail(req: FastifyRequest, next: Next, err: unknown, limiter?: Limiter): void {
  const { error, replaced } = requestError(err)
  if (replaced && (limiter === undefined || firstReport(limiter, err)))
    req.log.error(
      { err },
      'grudge: the request could not be limited (a key, cost, tier, skip or allow-list function, or the store, failed)',
    )
  next(error)
}

// a function that makes a closure (for a thenable) gets a context object at every call,
// taken or not: the asynchronous continuations are functions of their own, so that the
// synchronous path allocates none

function afterSkip(ctx: HookContext, req: FastifyRequest, reply: FastifyReply, next: Next): void {
  try {
    const key = deriveKey(ctx.config, ctx.view, req)
    if (key instanceof Promise) awaitKey(ctx, req, reply, next, key)
    else afterKey(ctx, req, reply, next, key)
  } catch (err) {
    fail(req, next, err)
  }
}

function awaitSkip(ctx: HookContext, req: FastifyRequest, reply: FastifyReply, next: Next, skip: PromiseLike<unknown>) {
  skip.then(
    (s) => (s ? next() : afterSkip(ctx, req, reply, next)),
    (err) => fail(req, next, err),
  )
}

function awaitKey(ctx: HookContext, req: FastifyRequest, reply: FastifyReply, next: Next, key: Promise<string>) {
  key.then(
    (k) => afterKey(ctx, req, reply, next, k),
    (err) => fail(req, next, err),
  )
}

function awaitAllowed(
  ctx: HookContext,
  req: FastifyRequest,
  reply: FastifyReply,
  next: Next,
  key: string,
  allowed: PromiseLike<unknown>,
) {
  allowed.then(
    (a) => (a ? next() : tierThenCharge(FASTIFY_STEPS, ctx, req, reply, next, key)),
    (err) => fail(req, next, err),
  )
}

function afterKey(ctx: HookContext, req: FastifyRequest, reply: FastifyReply, next: Next, key: string): void {
  try {
    const allowed = isAllowed(ctx.config.allowList, ctx.view, req, key)
    if (isThenable(allowed)) awaitAllowed(ctx, req, reply, next, key, allowed)
    else if (allowed) next()
    else tierThenCharge(FASTIFY_STEPS, ctx, req, reply, next, key)
  } catch (err) {
    fail(req, next, err)
  }
}

/** Fastify's continuation of the shared tier-then-charge step (a module constant: no closure per request). */
const FASTIFY_STEPS: ChargeSteps<HookContext, FastifyRequest, FastifyReply, Next> = {
  apply,
  fail: (_ctx, req, next, err, limiter) => fail(req, next, err, limiter),
}

function setReplyHeader(reply: FastifyReply, name: string, value: string): void {
  reply.header(name, value)
}

function apply(
  ctx: HookContext,
  req: FastifyRequest,
  reply: FastifyReply,
  next: Next,
  key: string,
  f: DecisionFigures,
): void {
  // a limiter of a stack that answered while another was waiting on its store decides nothing more
  if (decidedBy(req, ctx.limiter)) return next()
  const decision = decided(ctx, req, reply, key, f)
  if (f.admitted) {
    if (ctx.limiter.recordsOutcomes) {
      const pending = STATES.get(req)
      STATES.set(req, {
        key,
        startMs: ctx.limiter.sketch.clock.now(),
        limiter: ctx.limiter,
        config: ctx.config,
        reply,
        prev: pending === NO_RECORD ? undefined : pending,
      })
    }
    return next()
  }
  // a denial is never kept as figures: its Decision is request.grudge already
  const d = decision!
  try {
    const config = ctx.config
    config.onExceeded?.(req, key, d)
    const status = denialStatus(d, config.fairnessStatus, config.limitStatus)
    const build = config.errorResponseBuilder
    // through Fastify's error handler, as @fastify/rate-limit does: the builder's answer is
    // thrown and the reply's status left for the handler (error.statusCode)
    if (config.useErrorHandler) {
      const thrown = (build ?? defaultDenialError)(req, errorContext(d, key, status))
      // nothing to throw would let the denied request through: the error path instead
      if (thrown === undefined || thrown === null) return fail(req, next, nothingThrown(config, thrown))
      return next(thrown as Error)
    }
    // the default body needs no context, and is kept once built: a denial allocates nothing here
    const body = build === undefined ? cachedDefaultBody(status, d) : build(req, errorContext(d, key, status))
    reply.code(status).send(body)
  } catch (err) {
    next(err as Error)
  }
}

/**
 * The onRequest hook of a configuration and its limiter, marked as the scope's.
 * @param scope the plugin instance
 * @param config the parsed options
 * @param limiter the limiter of these options
 */
export function makeHook(scope: PluginScope, config: FastifyConfig, limiter: Limiter): Tagged {
  // a defaulted policy name yields to a named one in a stack (spec/http.md §3.1)
  const implicit = !config.limiter.limit || config.limiter.limit.name === undefined
  const fields = fieldSource(limiter, config.headers, implicit)
  const ctx: HookContext = {
    config,
    limiter,
    fields,
    tierFields: tierFieldSources(limiter, config, implicit),
    bloomOf: scope.bloomOf,
    view: scope.view,
  }
  const hook = function grudgeOnRequest(req: FastifyRequest, reply: FastifyReply, next: Next): void {
    if (decidedBy(req, limiter)) return next() // this limiter already decided this request
    try {
      if (config.skip === undefined) return afterSkip(ctx, req, reply, next)
      const skip = config.skip(req)
      if (isThenable(skip)) awaitSkip(ctx, req, reply, next, skip)
      else if (skip) next()
      else afterSkip(ctx, req, reply, next)
    } catch (err) {
      fail(req, next, err)
    }
  } as Tagged
  hook[kOwner] = scope.owner
  return hook
}

/** The hook as Fastify types it. */
export function asOnRequest(h: Tagged): onRequestHookHandler {
  return h as unknown as onRequestHookHandler
}

/**
 * The preHandler of the `bloom` route option: the handler runs only when the item may be
 * in the filter; otherwise `onAbsent` answers (default the 404 body).
 * @param scope the plugin instance (its registry)
 * @param b the route's `bloom` option
 * @param prefix option path prefix for messages (`config.grudge.bloom.`)
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option; also without a registry
 */
export function makeBloomHook(scope: PluginScope, b: FastifyBloomRouteOptions, prefix: string): preHandlerHookHandler {
  if (typeof b !== 'object' || b === null) invalidOption(prefix.slice(0, -1), 'an object { filter, item }', b)
  checkKnownOptions(b, FASTIFY_BLOOM_ROUTE_KEYS, prefix)
  if (typeof b.item !== 'function') invalidOption(prefix + 'item', 'a function (req) => string', b.item)
  if (b.onAbsent !== undefined && typeof b.onAbsent !== 'function')
    invalidOption(prefix + 'onAbsent', 'a function (req, reply)', b.onAbsent)
  const registry = scope.bloomRegistry
  if (registry === undefined) invalidOption('bloomRegistry', 'a registry (a route uses the bloom option)', registry)
  const gate = new BloomGate({ filter: b.filter }, prefix)
  const hook = async function grudgeBloom(req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    // a route with only a Bloom check has no decision; req.grudge.bloom(name) still works
    if (req.grudge === null) DECISIONS.set(req, Object.assign(unlimitedDecision(), { key: '', bloom: scope.bloomOf }))
    const item = await b.item(req)
    const present = await gate.check(registry, item)
    scope.telemetry.policy('bloom', present)
    if (present) return
    if (b.onAbsent !== undefined) {
      const body = await b.onAbsent(req, reply)
      if (!reply.sent && body !== undefined) return reply.send(body)
      if (!reply.sent) return reply.code(404).send(notFoundBody())
      return reply
    }
    return reply.code(404).send(notFoundBody())
  } as unknown as Tagged
  hook[kOwner] = scope.owner
  return hook as unknown as preHandlerHookHandler
}

/**
 * Record the outcomes of a request the limiters admitted (feedback and abuse scores), once
 * per request even when a route hook and a scope hook (not-found) both run, or the client
 * aborts and the response is sent later.
 * @param status the response's status, or undefined for an aborted request (each
 * limiter's `abortStatus`)
 */
function recordAll(req: FastifyRequest, status: number | undefined): void {
  let st = STATES.get(req)
  if (st === undefined || st === NO_RECORD) return
  STATES.set(req, NO_RECORD)
  for (; st !== undefined; st = st.prev) {
    try {
      const elapsedMs = st.limiter.sketch.clock.now() - st.startMs
      const o = outcomeOf(st.config, st.limiter, req, st.reply, status ?? st.config.abortStatus, elapsedMs)
      const p = st.limiter.record(st.key, o)
      if (p instanceof Promise) p.catch((err) => req.log.error({ err }, 'grudge: recording the outcome failed'))
    } catch (err) {
      req.log.error({ err }, 'grudge: recording the outcome failed')
    }
  }
}

/** The onResponse hook: record the outcome with the response's status. */
export function recordOutcome(req: FastifyRequest, reply: FastifyReply, next: () => void): void {
  recordAll(req, reply.statusCode)
  next()
}

/**
 * The onRequestAbort hook: a client that aborts is scored too (with `abortStatus`, default
 * 499), or aborting would be a way around the feedback and abuse scores.
 */
export function recordAborted(req: FastifyRequest, done: () => void): void {
  recordAll(req, undefined)
  done()
}

/**
 * A hook function marked as the instance's.
 * @param owner the instance's mark
 * @param hook the function (a fresh one: the mark is set on it)
 */
export function owned<F extends (...args: never[]) => unknown>(owner: symbol, hook: F): F & Tagged {
  const t = hook as F & Tagged
  t[kOwner] = owner
  return t
}
