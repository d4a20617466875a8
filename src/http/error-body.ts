/**
 * The bodies the adapters answer with: a denial's (`{ statusCode, error, message }`, naming
 * the retry delay) and the Bloom pre-check's 404. Written once here so that the Fastify
 * plugin and the Express middleware send the same bytes.
 * @module
 */
import type { Decision } from '../limit/decision.js'
import { retryAfterSeconds } from './headers.js'

/** What the error-response builder receives. */
export interface ErrorContext {
  /** 429, 503 or 403 (see `denialStatus`). */
  statusCode: number
  /** The policy that denied. */
  policy: Decision['policy']
  /** Retry-After in seconds (≥ 1), the same figure as the header and the `t=` of the RateLimit field. */
  retryAfterSeconds: number
  /** The debt meter's quota, if any. */
  limit: number | undefined
  /** The request key. */
  key: string
  /** The whole decision. */
  decision: Decision
}

/** The JSON body of an error answer, as Fastify's own errors are shaped. */
export interface ErrorBody {
  /** The HTTP status. */
  statusCode: number
  /** Its reason phrase. */
  error: string
  /** What happened, for a person. */
  message: string
}

const STATUS_TEXT: Record<number, string> = {
  403: 'Forbidden',
  404: 'Not Found',
  429: 'Too Many Requests',
  503: 'Service Unavailable',
}

/**
 * The default body of a denial: `{ statusCode, error, message }`, the message naming the
 * wait (`Rate limit exceeded, retry in 2 seconds`).
 * @param _req the request (unused; the signature is the `errorResponseBuilder` option's)
 * @param c the denial
 */
export function defaultErrorBody(_req: unknown, c: ErrorContext): ErrorBody {
  const what =
    c.policy === 'abuse'
      ? 'Blocked'
      : c.policy === 'fairness' || c.policy === 'store'
        ? 'Temporarily throttled'
        : 'Rate limit exceeded'
  return {
    statusCode: c.statusCode,
    error: STATUS_TEXT[c.statusCode] ?? 'Error',
    message: `${what}, retry in ${c.retryAfterSeconds} second${c.retryAfterSeconds === 1 ? '' : 's'}`,
  }
}

/**
 * The 404 body: of the Bloom pre-check when the item is surely absent (`Not found`), or of
 * the not-found handler (`Route GET:/x not found`).
 * @param message the message; default `Not found`
 * @internal
 */
export function notFoundBody(message = 'Not found'): ErrorBody {
  return { statusCode: 404, error: STATUS_TEXT[404], message }
}

/**
 * The context handed to the error-response builder.
 * @param decision the denial
 * @param key the request key
 * @param statusCode the status the adapter answers with
 * @internal
 */
export function errorContext(decision: Decision, key: string, statusCode: number): ErrorContext {
  return {
    statusCode,
    policy: decision.policy,
    retryAfterSeconds: retryAfterSeconds(decision.retryAfterMs),
    limit: decision.limit,
    key,
    decision,
  }
}

/** What the adapters hand the framework's error path instead of an internal error. */
export interface InternalError extends Error {
  /** Always 500. */
  readonly statusCode: 500
}

/**
 * The error a request-time failure of grudge or of a user function goes down the
 * framework's error path as: the cause itself when it carries an HTTP status of its own
 * (`statusCode` or `status`, e.g. an http-errors 401 thrown by a key function: the
 * application meant it), else a generic `Internal Server Error` (status 500, no code) with
 * the cause attached, so neither grudge's option text nor its code reaches the client. The
 * adapter logs the cause under grudge's name.
 * @param cause what was thrown or rejected
 * @returns the error to pass on, and whether it replaces the cause (then log the cause)
 * @internal
 */
export function requestError(cause: unknown): { error: Error; replaced: boolean } {
  if (cause instanceof Error) {
    const c = cause as { statusCode?: unknown; status?: unknown; code?: unknown }
    const own = typeof c.statusCode === 'number' ? c.statusCode : typeof c.status === 'number' ? c.status : undefined
    const ours = typeof c.code === 'string' && c.code.startsWith('ERR_GRUDGE_')
    if (own !== undefined && !ours) return { error: cause, replaced: false }
  }
  const error = new Error('Internal Server Error', { cause }) as Error & { statusCode: 500 }
  error.statusCode = 500
  return { error, replaced: true }
}
