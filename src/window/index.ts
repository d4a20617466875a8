// Public exports of src/window: what a user constructs, calls or catches: the mergeable
// contract, HyperLogLog, Count-Min and Window.
export type { Mergeable, MergeableFamily } from './mergeable.js'
export { HyperLogLog, hyperLogLogStandardError, HLL_MIN_PRECISION, HLL_MAX_PRECISION } from './hyperloglog.js'
export type { HyperLogLogSizeOptions, HyperLogLogAccuracyOptions, HyperLogLogHashOptions } from './hyperloglog.js'
export { CountMinSketch, countMinWidth, countMinDepth, CMS_MAX_COUNT } from './count-min.js'
export type { CountMinSizeOptions, CountMinAccuracyOptions, CountMinCommonOptions } from './count-min.js'
export { Window, WINDOW_MAX_KEEP } from './window.js'
export type { WindowOptions, WindowDeserializeOptions, WindowSlot, WindowItem, RollEvent } from './window.js'
