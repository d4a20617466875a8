// Public exports of src/http: client keys and rate-limit response fields.
export { normalizeIp, keyPart, joinKeyParts } from './client-key.js'
export type { KeyRequest, KeyPartName, ClientKeyOptions, KeySpec } from './client-key.js'
export { rateLimitHeaders, fieldSource } from './headers.js'
export type { HeaderOptions, FieldSource, FieldOwner, FieldMeter } from './headers.js'
export { denialStatus } from './status.js'
export type { FairnessStatus } from './status.js'
