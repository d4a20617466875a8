/**
 * The options of the Express middleware and their key tables: the interfaces and the names
 * the unknown-option check compares against live in one file.
 * @module
 */
import type { NextFunction, Request, Response } from 'express'
import { optionKeys } from '../../src/options.js'
import { COMMON_OPTION_NAMES, type CommonOptions } from '../../src/http/options.js'
import type { BloomRegistryConfig, BloomRegistryLike } from '../../src/http/bloom-registry.js'
import type { ErrorContext } from '../../src/http/error-body.js'

/** The middleware's `bloom` option: answer without running the handler when the item is surely absent. */
export interface GrudgeExpressBloomOptions {
  /** The filter registry: one to use, or `{ dir, filters }` to open one (then closed by `close()`). */
  registry: BloomRegistryLike | BloomRegistryConfig
  /** Name of the filter in the registry to consult. */
  filter: string
  /** The item to look up, from the request (e.g. `req.params.id`); may be async; a throw or rejection goes to `next(err)`. */
  item: (req: Request) => string | Promise<string>
  /** Answers when the item is surely absent (the handler never runs); default a 404 response. */
  onAbsent?: (req: Request, res: Response) => void
}

/** Options of the Express middleware. */
export interface GrudgeExpressOptions extends CommonOptions<Request, Response> {
  /**
   * Name of this middleware's limiter: namespaces its state within a shared store, and is
   * the default policy name in the `RateLimit-Policy` / `RateLimit` fields when
   * `limit.name` is not given. Default `express:<n>` by creation order (the policy name
   * then defaults to `default`; see `limit.name`). Printable ASCII without `%`, as `limit.name`.
   */
  name?: string
  /**
   * Custom answer for a denial (express-rate-limit's `handler`): the context carries the
   * status to answer with (`statusCode`: the `statusCode` option (429 by default), 503 or
   * 403), the retry delay and the decision (express-rate-limit passes its options instead).
   * It may be async: a rejection goes to `next(err)`. Exclusive with `message`,
   * `errorResponseBuilder` and `useErrorHandler` (`ERR_GRUDGE_OPTION_INVALID`).
   */
  handler?: (req: Request, res: Response, next: NextFunction, context: ErrorContext) => unknown
  /**
   * The body of a denial, as express-rate-limit's `message`: a string (sent as `text/html`
   * by `res.send`), an object (sent as JSON) or a function `(req, res) => body`, sync or
   * async, called after the status is set (so it may read `res.statusCode`, or answer
   * itself: nothing more is sent once the response has ended); a rejection goes to
   * `next(err)`. Default: the JSON `{ statusCode, error, message }` of
   * `errorResponseBuilder` (express-rate-limit's default is the text `Too many requests,
   * please try again later.`). Exclusive with `handler`, `errorResponseBuilder` and
   * `useErrorHandler` (`ERR_GRUDGE_OPTION_INVALID`).
   */
  message?: string | object | ((req: Request, res: Response) => unknown)
  /** Where the middleware's warnings go (sizing, a missing client address, a failing store (once per outage, then at most once a minute), request-time failures, no policy); default `console.warn`. */
  warn?: (message: string) => void
  /** Bloom pre-check: `{ registry, filter, item, onAbsent }`; when the item is surely absent, `onAbsent` answers (default 404). `registry` is a registry or `{ dir, filters }` to build one (closed by `close()`). */
  bloom?: GrudgeExpressBloomOptions
}

/** The names of {@link GrudgeExpressOptions}. */
export const GRUDGE_EXPRESS_OPTION_KEYS = optionKeys<GrudgeExpressOptions>({
  ...COMMON_OPTION_NAMES,
  name: true,
  handler: true,
  message: true,
  warn: true,
  bloom: true,
})

/** The names of {@link GrudgeExpressBloomOptions} (`bloom`). */
export const EXPRESS_BLOOM_KEYS = optionKeys<GrudgeExpressBloomOptions>({
  registry: true,
  filter: true,
  item: true,
  onAbsent: true,
})
