/**
 * grudge: rate limiting and abuse scoring over unbounded key spaces in constant memory.
 * The core entry point (`grudge`); test utilities are in `grudge/testing`, adapters in
 * `grudge/fastify` and `grudge/express`.
 * @packageDocumentation
 */
export { ERROR_CODES, GrudgeError, GrudgeRangeError, GrudgeTypeError } from './errors.js'
export type { GrudgeErrorCode, CodedError } from './errors.js'
export { systemClock, systemTicker } from './clock.js'
export type { Clock, Ticker, TickerHandle } from './clock.js'
export * from './hash/index.js'
export * from './sketch/index.js'
export * from './bloom/index.js'
export * from './window/index.js'
export * from './limit/index.js'
export * from './http/index.js'
export * from './cluster/index.js'
