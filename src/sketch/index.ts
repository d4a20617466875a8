export { Sketch } from './sketch.js'
export type { SketchDetail } from './sketch.js'
export type {
  SketchOptions,
  SketchShape,
  Aggregator,
  Decay,
  DecayKind,
  DeserializeOptions,
  RotatorOptions,
  RotatorDeserializeOptions,
} from './shape.js'
export { exponential, linear, none, halfLife, applyDecay } from './decay.js'
export { sketchFalsePositiveRate, sketchSuggestLevels } from './sizing.js'
export { suggestPeriodMs } from './rotator-period.js'
export { Rotator } from './rotator.js'
export { SketchDelta } from './sketch-delta.js'
export { RotatorDelta } from './rotator-delta.js'
export { SKETCH_FORMAT_VERSION } from './sketch-codec.js'
export { ROTATOR_FORMAT_VERSION } from './rotator-codec.js'
