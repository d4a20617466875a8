// Public exports of src/window: the mergeable contract, HyperLogLog, Count-Min and Window.
export { checkMergeableFamily, hasWholeEstimate } from './mergeable.js'
export type { Mergeable, MergeableFamily, MergeMethod } from './mergeable.js'
export { HyperLogLog, hllRelativeStandardError, HLL_MIN_PRECISION, HLL_MAX_PRECISION } from './hyperloglog.js'
export type { HyperLogLogOptions } from './hyperloglog.js'
export { CountMinSketch, countMinWidth, countMinDepth, CMS_MAX_COUNT } from './count-min.js'
export type { CountMinOptions, CountMinAccuracy } from './count-min.js'
export { Window, WINDOW_MAX_KEEP } from './window.js'
export type { WindowOptions, WindowDeserializeOptions, WindowSlot, RollEvent } from './window.js'
