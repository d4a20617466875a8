/**
 * Test utilities (`grudge/testing`): a clock and a ticker that move only when told to, so
 * tests of decay, rotation and checkpoints never sleep.
 * @packageDocumentation
 */
import { ManualClock, ManualTicker } from '../clock.js'

/**
 * A clock that moves only when told to (the `ManualClock` of grudge's clock module, under its test name). Time is in
 * milliseconds; it may be set backwards to test how structures cope.
 */
export class FakeClock extends ManualClock {}

/**
 * A ticker whose tasks run only on `tick()`, synchronously (the `ManualTicker` of grudge's clock module, under its
 * test name), so tests of rotation and checkpoints never poll or sleep.
 */
export class FakeTicker extends ManualTicker {}
