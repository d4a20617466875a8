/**
 * The types both adapters export (`grudge/fastify` and `grudge/express`): what their
 * options, callbacks and request state are made of. One list, so the two entry points
 * cannot drift apart.
 * @module
 */
export type {
  CommonOptions,
  AdapterLimitOptions,
  AdapterTieredLimitOptions,
  AdapterFairnessOptions,
  AdapterAbuseOptions,
} from './options.js'
export type { KeyOps, PeekOptions } from './key-ops.js'
export type { KeyState, LimitState, ForgiveOptions } from '../limit/key-state.js'
export type { KeySpec } from './client-key.js'
export type { ErrorContext, ErrorBody, DenialError } from './error-body.js'
export type { BloomRegistryLike, BloomRegistryConfig } from './bloom-registry.js'
export type { FairnessStatus } from './status.js'
export type { StandardHeadersDraft } from './headers.js'
export type { Decision, PolicyName } from '../limit/decision.js'
export type { LimiterStats } from '../limit/telemetry.js'
