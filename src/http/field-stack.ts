/**
 * Several grudge limiters on one request (stacked Express middleware, e.g. a global per-IP
 * limit and a per-route per-API-key limit): their rate-limit fields are merged instead of
 * the later one overwriting the earlier (spec/http.md §3.1).
 *
 * - `RateLimit-Policy` and `RateLimit` are Structured Field Lists (RFC 9651) with one member
 *   per policy, in the order the limiters ran. Names are unique within a field: a name given
 *   explicitly (`limit.name`, or the middleware's `name`) replaces an earlier member of the
 *   same name; a defaulted name (`default`) never replaces one, and on a clash the member is
 *   written under the limiter's own name (`express:<n>`) instead.
 * - `X-RateLimit-*` describe one policy: the one that denied, else the one with the fewest
 *   units remaining (a tie: the longer reset).
 * - `Retry-After` is the largest of the denials' waits.
 *
 * - The fields follow the draft of the first limiter (`standardHeaders`). In drafts 6 and 7,
 *   whose `RateLimit` (draft-7) or `RateLimit-Limit/-Remaining/-Reset` (draft-6) describe
 *   one policy, those describe the tightest policy (as the legacy fields do), while
 *   `RateLimit-Policy` lists every policy (`<quota>;w=<window>`, a List in both drafts).
 *
 * The first limiter on a request writes its decision's fields as they are and marks the
 * request with its `FieldSource` (no allocation); only a second one builds a
 * {@link FieldStack}, from the figures the decisions already carry: no header is parsed.
 * @module
 */
import type { Decision } from '../limit/decision.js'
import {
  countFigure,
  retryAfterSeconds,
  secondsFigure,
  type FieldSource,
  type StandardHeadersDraft,
} from './headers.js'

/** One policy's member of the fields. */
interface Member {
  readonly source: FieldSource
  /** The name written, as an sf-string. */
  readonly quoted: string
  readonly policy: string
  readonly state: string
  readonly limit: number
  readonly remaining: number
  readonly reset: number
  readonly denied: boolean
}

/**
 * Where the fields go: a Node `ServerResponse` (Express's `res`) is one.
 * @internal
 */
export interface FieldWriter {
  /** Set a response field. */
  setHeader(name: string, value: string): unknown
  /** Remove a response field. */
  removeHeader(name: string): unknown
}

/** Whether member a describes a tighter situation than b, for the single-policy legacy fields. */
function tighter(a: Member, b: Member): boolean {
  if (a.denied !== b.denied) return a.denied
  if (a.remaining !== b.remaining) return a.remaining < b.remaining
  return a.reset > b.reset
}

/**
 * The members of every limiter that decided one request so far (see the module comment).
 * @internal
 */
export class FieldStack {
  private readonly members: Member[] = []
  /** Largest Retry-After (s) of the denials so far; 0 for none. */
  private retryAfter = 0
  private wroteIetf: boolean
  private wroteLegacy: boolean
  /** The draft of the IETF fields: the first limiter's. */
  private readonly draft: StandardHeadersDraft

  /**
   * A stack holding the first limiter's member, whose fields that limiter has already written.
   * @param source the first limiter's field source
   * @param first its decision
   */
  constructor(source: FieldSource, first: Decision) {
    this.draft = source.draft
    this.add(source, first)
    const m = this.members.length > 0 ? this.members[0] : undefined
    this.wroteIetf = m !== undefined && source.ietf
    this.wroteLegacy = m !== undefined && source.legacy
  }

  private indexOf(quoted: string): number {
    for (let i = 0; i < this.members.length; i++) if (this.members[i].quoted === quoted) return i
    return -1
  }

  /**
   * Add (or update) a limiter's member.
   * @param source the limiter's field source
   * @param d its decision for this request
   */
  add(source: FieldSource, d: Decision): void {
    // the same limiter deciding again on this request (mounted twice): its latest figures count
    for (let i = 0; i < this.members.length; i++) {
      if (this.members[i].source === source) {
        this.members.splice(i, 1)
        break
      }
    }
    if (!d.admitted && source.retryAfter) {
      const s = retryAfterSeconds(d.retryAfterMs)
      if (s > this.retryAfter) this.retryAfter = s
    }
    // no debt meter, or a store that failed open: no figures, no member (none are invented)
    if (d.limit === undefined || d.remaining === undefined || d.resetMs === undefined) return
    if (!source.ietf && !source.legacy) return
    let quoted = source.quotedName
    let policy = source.policyField
    let j = this.indexOf(quoted)
    if (j >= 0 && source.implicit) {
      // a defaulted name yields: written under the limiter's own name
      quoted = source.altQuotedName
      policy = source.altPolicyField
      j = this.indexOf(quoted)
      // the limiter's own name is taken too (a Fastify plugin limiter is named `default`):
      // numbered by its place in the stack, so no member of another limiter is replaced
      if (j >= 0 && this.members[j].source !== source) {
        quoted = `${source.altQuotedName.slice(0, -1)}#${this.members.length + 1}"`
        policy = quoted + source.altPolicyField.slice(source.altQuotedName.length)
        j = this.indexOf(quoted)
      }
    }
    const remaining = countFigure(d.remaining)
    const reset = secondsFigure(d.resetMs)
    const m: Member = {
      source,
      quoted,
      policy,
      state: `${quoted};r=${remaining};t=${reset}`,
      limit: countFigure(d.limit),
      remaining,
      reset,
      denied: !d.admitted,
    }
    // a name given explicitly twice: the later limiter's member replaces the earlier one
    if (j >= 0) this.members[j] = m
    else this.members.push(m)
  }

  /**
   * Write the merged fields (before the response's head is sent).
   * @param out the response
   */
  write(out: FieldWriter): void {
    const named = this.draft === 'draft-8' || this.draft === 'draft-10'
    let policy = ''
    let state = ''
    let tight: Member | undefined
    let tightIetf: Member | undefined
    for (const m of this.members) {
      if (m.source.ietf) {
        const p = named ? m.policy : m.source.unnamedPolicyField
        policy = policy === '' ? p : policy + ', ' + p
        if (named) state = state === '' ? m.state : state + ', ' + m.state
        else if (tightIetf === undefined || tighter(m, tightIetf)) tightIetf = m
      }
      if (m.source.legacy && (tight === undefined || tighter(m, tight))) tight = m
    }
    if (policy !== '') {
      out.setHeader('ratelimit-policy', policy)
      if (named) out.setHeader('ratelimit', state)
      else if (this.draft === 'draft-7')
        out.setHeader(
          'ratelimit',
          `limit=${tightIetf!.limit}, remaining=${tightIetf!.remaining}, reset=${tightIetf!.reset}`,
        )
      else {
        out.setHeader('ratelimit-limit', String(tightIetf!.limit))
        out.setHeader('ratelimit-remaining', String(tightIetf!.remaining))
        out.setHeader('ratelimit-reset', String(tightIetf!.reset))
      }
      this.wroteIetf = true
    } else if (this.wroteIetf) {
      out.removeHeader('ratelimit-policy')
      if (this.draft === 'draft-6') {
        out.removeHeader('ratelimit-limit')
        out.removeHeader('ratelimit-remaining')
        out.removeHeader('ratelimit-reset')
      } else out.removeHeader('ratelimit')
      this.wroteIetf = false
    }
    if (tight !== undefined) {
      out.setHeader('x-ratelimit-limit', String(tight.limit))
      out.setHeader('x-ratelimit-remaining', String(tight.remaining))
      out.setHeader('x-ratelimit-reset', String(tight.reset))
      this.wroteLegacy = true
    } else if (this.wroteLegacy) {
      out.removeHeader('x-ratelimit-limit')
      out.removeHeader('x-ratelimit-remaining')
      out.removeHeader('x-ratelimit-reset')
      this.wroteLegacy = false
    }
    if (this.retryAfter > 0) out.setHeader('retry-after', String(this.retryAfter))
  }
}
