/**
 * The bodies the adapters answer with: a denial's (`{ statusCode, error, message }`, naming
 * the retry delay; an `Error` of the same figures when the denial goes through the
 * framework's error handler) and the Bloom pre-check's 404. Written once here so that the
 * Fastify plugin and the Express middleware send the same bytes.
 * @module
 */
import type { Decision } from '../limit/decision.js'
import { retryAfterSeconds } from './headers.js'

/** What the error-response builder receives. */
export interface ErrorContext {
  /** The status answered: `statusCode` (429 by default), 503 or 403 (see `denialStatus`). */
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

/** Reason phrases of the 4xx and 5xx statuses of RFC 9110 and RFC 6585 (a `statusCode` option may pick any). */
const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  407: 'Proxy Authentication Required',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'Length Required',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  416: 'Range Not Satisfiable',
  417: 'Expectation Failed',
  421: 'Misdirected Request',
  422: 'Unprocessable Content',
  426: 'Upgrade Required',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
  505: 'HTTP Version Not Supported',
}

/** The reason phrase of a status (`Error` for one without a phrase here). */
function reason(status: number): string {
  return STATUS_TEXT[status] ?? 'Error'
}

function denialMessage(policy: Decision['policy'], seconds: number): string {
  const what =
    policy === 'abuse'
      ? 'Blocked'
      : policy === 'fairness' || policy === 'store'
        ? 'Temporarily throttled'
        : 'Rate limit exceeded'
  return `${what}, retry in ${seconds} second${seconds === 1 ? '' : 's'}`
}

/**
 * The default body of a denial: `{ statusCode, error, message }`, the message naming the
 * wait (`Rate limit exceeded, retry in 2 seconds`).
 * @param _req the request (unused; the signature is the `errorResponseBuilder` option's)
 * @param c the denial
 */
export function defaultErrorBody(_req: unknown, c: ErrorContext): ErrorBody {
  return {
    statusCode: c.statusCode,
    error: reason(c.statusCode),
    message: denialMessage(c.policy, c.retryAfterSeconds),
  }
}

/** Default bodies built so far, by (status, policy, seconds); frozen, at most 1024. */
const BODIES = new Map<number, ErrorBody>()
const POLICY_INDEX: Record<string, number> = { limit: 0, fairness: 1, store: 1, abuse: 2 }

/**
 * The default body of a denial (the same as {@link defaultErrorBody}) without building a
 * context: frozen and kept (at most 1024 distinct bodies), so that a denial answered with
 * the default body allocates nothing in a steady state. Only for the adapters' send path,
 * where the body is serialized at once (never handed to user code that could keep it).
 * @param status the status answered
 * @param d the denial
 * @internal
 */
export function cachedDefaultBody(status: number, d: Decision): ErrorBody {
  const seconds = retryAfterSeconds(d.retryAfterMs)
  const cacheable = seconds < 1_000_000
  const k = (status * 3 + (POLICY_INDEX[d.policy ?? 'limit'] ?? 0)) * 1_000_000 + seconds
  if (cacheable) {
    const b = BODIES.get(k)
    if (b !== undefined) return b
  }
  const b = Object.freeze({ statusCode: status, error: reason(status), message: denialMessage(d.policy, seconds) })
  if (cacheable && BODIES.size < 1024) BODIES.set(k, b)
  return b
}

/**
 * A denial as an error, for the framework's error handler (Fastify's `setErrorHandler`,
 * Express's error middleware): what `useErrorHandler` throws by default, shaped like a
 * FastifyError: `message` as the default body's, `statusCode` (and `status`, which
 * Express's `finalhandler` reads) the status answered. Fastify's default error handler
 * answers it as `{ statusCode, error, message }`, the bytes of the default body.
 */
export interface DenialError extends Error {
  /** The status answered (429 by default). */
  statusCode: number
  /** The same status, for Express's error handlers. */
  status: number
}

/**
 * The default error of a denial that goes through the framework's error handler
 * (`useErrorHandler`): a fresh {@link DenialError} per denial, as the handler may change it.
 * @param _req the request (unused; the signature is the `errorResponseBuilder` option's)
 * @param c the denial
 */
export function defaultDenialError(_req: unknown, c: ErrorContext): DenialError {
  const e = new Error(denialMessage(c.policy, c.retryAfterSeconds)) as DenialError
  e.statusCode = c.statusCode
  e.status = c.statusCode
  return e
}

/**
 * The 404 body: of the Bloom pre-check when the item is surely absent (`Not found`), or of
 * the not-found handler (`Route GET:/x not found`).
 * @param message the message; default `Not found`
 * @internal
 */
export function notFoundBody(message = 'Not found'): ErrorBody {
  return { statusCode: 404, error: reason(404), message }
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
