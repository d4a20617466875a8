// Public exports of src/http: client keys and rate-limit response fields.
export { normalizeIp, keyPart, joinKeyParts, checkIpv6Subnet } from './client-key.js'
export type { KeyRequest, KeyPartName, ClientKeyOptions } from './client-key.js'
export { rateLimitHeaders, policyField, delaySeconds, retryAfterSeconds, nonNegativeInt, sfString } from './headers.js'
export type { HeaderOptions, RateLimitFigures } from './headers.js'
