import type { Clock } from '../clock.js'
import { FAMILY, FieldReader, FieldWriter, invalidField, readFrame, writeFrame } from '../format/frame.js'
import { finiteNow, readerStamp, TimeMap, type WriterStamp } from './clock-stamp.js'
import type { CellView } from './cells.js'
import { GenerationHasher, hasherFromId } from '../hash/hasher.js'
import { generationSeed, keyHashFor } from './generation-seed.js'
import { MAX_CELLS, type DeserializeOptions, type SketchShape } from './shape.js'
import {
  FLAG_DELTA,
  FLAG_SPARSE,
  SHAPE_PARAMS_BYTES,
  checkFlags,
  readCells,
  readShape,
  readSparse,
  shapeWithSeed,
  sparseBytes,
  sparseInfo,
  writeCells,
  writeShape,
  writeSparse,
  type DecodedCells,
  type DecodedShape,
} from './sketch-codec.js'

// The rotator family (FAMILY.rotator): the sketch family's shape block, the rotator's own
// fields, then per generation (oldest first) its seed, (version 2) its cells per level and
// creation time, and a sketch cell block. Byte table in `spec/format.md`.

/** Highest version of the rotator family (FAMILY.rotator = 2) this release writes and reads (2: a shape per generation). */
export const ROTATOR_FORMAT_VERSION = 2
/** Bytes before a generation's cell block: seed (16); version 2 adds cells per level u32, reserved u32, creation time f64. */
const GEN_HEADER_BYTES = [0, 16, 32] as const
/**
 * Size in bytes of the rotator params (shape block + rotator fields).
 * @internal
 */
export const ROTATOR_PARAMS_BYTES = SHAPE_PARAMS_BYTES + 32
/**
 * Rotator frame flag bit 1: generation seeds derive from the master seed in the frame's seed field.
 * @internal
 */
export const FLAG_SEEDED = 2
/**
 * Rotator frame flag bit 3: the generations place keys by the keyed-mix placement (one
 * key hash under the placement seed, mixed per generation: spec/rotator.md §1
 * "Placement"). Without bit 1 the seed field holds the rotator's private master seed, from
 * which the generation seeds and the placement seed derive. Frames without it keep the
 * placement they were written with (each generation hashes the key under its own seed).
 * @internal
 */
export const FLAG_KEY_HASH = 8

/**
 * Rotator-level fields of a rotator-family frame.
 * @internal
 */
export interface RotatorFields {
  /** N, generations. */
  generations: number
  /** Rotation period in ms. */
  periodMs: number
  /** Completed rotations (the index of the oldest generation). */
  rotations: number
  /** Clock time in ms of the last rotation (or construction). */
  lastRotationAtMs: number
}

/**
 * One generation's cells and seed.
 * @internal
 */
export interface GenerationCells {
  seed: Uint8Array
  /** M of this generation (generations of a self-sized rotator differ). */
  cellsPerLevel: number
  /** Clock time in ms at which the generation was created (writer's clock). */
  createdAtMs: number
  /** The generation's cells, in its sketch's layout or a delta's (`cells.ts`). */
  cells: CellView
}

/**
 * A fully decoded and verified rotator-family frame.
 * @internal
 */
export interface DecodedRotator {
  /** The shape block (without a seed: each generation has its own). */
  shape: DecodedShape
  fields: RotatorFields
  masterSeed: Uint8Array | undefined
  /** Per generation, oldest first: its shape (hasher under its seed, its own cells per level), creation time on the reader's clock, and cells. */
  gens: { shape: SketchShape; createdAtMs: number; cells: DecodedCells }[]
  clock: Clock
  delta: boolean
}

/**
 * Encode a rotator-family frame (version 2). See `spec/format.md`.
 * @param shape the shape block; its cellsPerLevel MUST be the oldest generation's
 * @param masterSeed the rotator's master seed (flag bit 1) or undefined
 * @param keyHashMaster the master of the generations' shared key hash (flag bit 3: the
 *   keyed-mix placement; the seed field holds it when there is no master seed), or
 *   undefined (the placement before it; seed field zero without a master seed)
 * @internal
 */
export function encodeRotator(
  shape: SketchShape,
  stamp: WriterStamp,
  fields: RotatorFields,
  masterSeed: Uint8Array | undefined,
  keyHashMaster: Uint8Array | undefined,
  gens: readonly GenerationCells[],
  delta: boolean,
): Uint8Array {
  const params = new Uint8Array(ROTATOR_PARAMS_BYTES)
  const pw = new FieldWriter(params)
  writeShape(pw, shape, stamp)
  pw.u32(fields.generations)
  pw.u32(0)
  pw.f64(fields.periodMs)
  pw.f64(fields.rotations)
  pw.f64(fields.lastRotationAtMs)
  const H = GEN_HEADER_BYTES[ROTATOR_FORMAT_VERSION]
  const denseBytes = gens.reduce((acc, g) => acc + H + g.cells.count * 16, 0)
  const sparse = delta ? gens.map((g) => sparseInfo(g.cells)) : []
  const sparseTotal = (): number => sparse.reduce((acc, x) => acc + H + sparseBytes(x!.count), 0)
  const useSparse = delta && sparse.every((x) => x !== undefined) && sparseTotal() < denseBytes
  const payload = new Uint8Array(useSparse ? sparseTotal() : denseBytes)
  const w = new FieldWriter(payload)
  for (let g = 0; g < gens.length; g++) {
    w.raw(gens[g].seed)
    w.u32(gens[g].cellsPerLevel)
    w.u32(0)
    w.f64(gens[g].createdAtMs)
    if (useSparse) writeSparse(w, gens[g].cells, sparse[g].count, sparse[g].at)
    else writeCells(w, gens[g].cells)
  }
  const flags =
    (delta ? FLAG_DELTA : 0) |
    (masterSeed !== undefined ? FLAG_SEEDED : 0) |
    (useSparse ? FLAG_SPARSE : 0) |
    (keyHashMaster !== undefined ? FLAG_KEY_HASH : 0)
  return writeFrame({
    family: FAMILY.rotator,
    version: ROTATOR_FORMAT_VERSION,
    flags,
    seed: masterSeed ?? keyHashMaster ?? new Uint8Array(16),
    params,
    payload,
  })
}

/**
 * Decode and check a rotator-family frame; times (cells and last rotation) are mapped
 * onto the reader's clock. Generation seeds are checked against the master seed when
 * flag bit 1 is set.
 * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_*`
 * @internal
 */
export function decodeRotator(
  bytes: Uint8Array,
  wantDelta: boolean,
  options: DeserializeOptions | undefined,
): DecodedRotator {
  const { clock, wall } = readerStamp(options)
  const frame = readFrame(bytes, FAMILY.rotator, ROTATOR_FORMAT_VERSION)
  const isSparse = checkFlags(
    frame.flags,
    FLAG_SEEDED | FLAG_KEY_HASH,
    'only bits 0 (delta), 1 (seeded), 2 (sparse) and 3 (keyed-mix placement) may be set',
    wantDelta,
    { delta: 'RotatorDelta.deserialize', full: 'Rotator.deserialize' },
  )
  const isDelta = wantDelta
  const seeded = (frame.flags & FLAG_SEEDED) !== 0
  const keyHashed = (frame.flags & FLAG_KEY_HASH) !== 0
  if (frame.params.length !== ROTATOR_PARAMS_BYTES)
    invalidField('params length', `${ROTATOR_PARAMS_BYTES}`, frame.params.length)
  const pr = new FieldReader(frame.params)
  const shape = readShape(pr)
  const generations = pr.u32('generations')
  const reserved = pr.u32('reserved bytes 56..59')
  const periodMs = pr.f64('periodMs')
  const rotations = pr.f64('rotations')
  const lastRotationAtMs = pr.f64('last rotation ms')
  if (generations < 2 || generations > 0xffff) invalidField('generations', 'an integer in [2, 65535]', generations)
  if (reserved !== 0) invalidField('reserved bytes 56..59', '0', reserved)
  if (!(Number.isFinite(periodMs) && periodMs > 0)) invalidField('periodMs', 'a finite number > 0', periodMs)
  if (!(Number.isSafeInteger(rotations) && rotations >= 0)) invalidField('rotations', 'a safe integer ≥ 0', rotations)
  if (!Number.isFinite(lastRotationAtMs)) invalidField('last rotation ms', 'a finite number', lastRotationAtMs)
  const master = seeded ? new Uint8Array(frame.seed) : undefined
  // the keyed-mix placement: one key hash for every generation, under the seed field's master
  const derivedFrom = seeded || keyHashed ? new Uint8Array(frame.seed) : undefined
  const keys = keyHashed ? keyHashFor(hasherFromId(shape.hasherId, frame.seed), derivedFrom!) : undefined
  if (!seeded && !keyHashed) {
    for (let i = 0; i < 16; i++)
      if (frame.seed[i] !== 0) invalidField('seed', '16 zero bytes (flag bit 1 clear: no master seed)', frame.seed[i])
  }
  const version = frame.version
  const H = GEN_HEADER_BYTES[version as 1 | 2]
  if (version === 1 && !isSparse) {
    const per = 16 + shape.levels * shape.cellsPerLevel * 16
    if (frame.payload.length !== generations * per)
      invalidField(
        'payload length',
        `${generations * per} (generations × (16 + 16 × levels × cellsPerLevel))`,
        frame.payload.length,
      )
  }
  const end = frame.payload.length
  const time = new TimeMap(shape.writer, finiteNow(clock, 'deserialize'), wall)
  const gens: DecodedRotator['gens'] = []
  const r = new FieldReader(frame.payload)
  for (let g = 0; g < generations; g++) {
    if (r.remaining < H) invalidField('payload length', `room for generation ${g}'s header at offset ${r.offset}`, end)
    const seed = r.raw(16, `generation ${g} seed`)
    if (derivedFrom !== undefined) {
      const want = generationSeed(derivedFrom, rotations + g)
      for (let i = 0; i < 16; i++) {
        if (seed[i] !== want[i])
          invalidField(
            `generation ${g} seed`,
            `the seed derived from the master seed for generation index ${rotations + g}`,
            'another seed',
          )
      }
    }
    let genShape = shape
    // version 1: every generation has the header's shape, created one period after the one before
    let createdAtMs = lastRotationAtMs - (generations - 1 - g) * periodMs
    if (version >= 2) {
      const cells = r.u32(`generation ${g} cellsPerLevel`)
      const reservedGen = r.u32(`generation ${g} reserved`)
      createdAtMs = r.f64(`generation ${g} creation ms`)
      if (cells < 1 || shape.levels * cells > MAX_CELLS)
        invalidField(
          `generation ${g} cellsPerLevel`,
          `an integer ≥ 1 with levels × cellsPerLevel ≤ 2^30 (levels = ${shape.levels})`,
          cells,
        )
      if (g === 0 && cells !== shape.cellsPerLevel)
        invalidField(
          'generation 0 cellsPerLevel',
          `the header's cellsPerLevel (${shape.cellsPerLevel}): the header describes the oldest generation`,
          cells,
        )
      if (reservedGen !== 0) invalidField(`generation ${g} reserved`, '0', reservedGen)
      if (!Number.isFinite(createdAtMs)) invalidField(`generation ${g} creation ms`, 'a finite number', createdAtMs)
      genShape = { ...shape, cellsPerLevel: cells }
      if (!isSparse && r.remaining < cells * shape.levels * 16)
        invalidField(
          'payload length',
          `room for generation ${g}'s ${shape.levels} × ${cells} cells at offset ${r.offset}`,
          end,
        )
    }
    const cells = isSparse
      ? readSparse(r, genShape, time, `generation ${g}`)
      : readCells(r, genShape, isDelta, time, `generation ${g} cell`)
    const genHashed = shapeWithSeed(genShape, seed)
    gens.push({
      shape: keys === undefined ? genHashed : { ...genHashed, hasher: new GenerationHasher(keys, seed) },
      createdAtMs: time.map(createdAtMs),
      cells,
    })
  }
  if (r.remaining !== 0) invalidField('payload length', `${r.offset} (the generations' blocks)`, end)
  return {
    shape,
    fields: { generations, periodMs, rotations, lastRotationAtMs: time.map(lastRotationAtMs) },
    masterSeed: master,
    gens,
    clock,
    delta: isDelta,
  }
}
