// A tiny test-only mergeable family that merges by `union` (as the Bloom filter does):
// a 64-bit set of hashed items. It exists to check the contract and the Window against a
// family other than the two built-ins; its frame uses family id 250 (never a real one).
import { readFrame, writeFrame, invalidField } from '../../src/format/frame.js'
import { GrudgeError } from '../../src/errors.js'

export const TINY_FAMILY = 250

function bit(item: string): number {
  let h = 2166136261
  for (let i = 0; i < item.length; i++) h = Math.imul(h ^ item.charCodeAt(i), 16777619)
  return (h >>> 0) % 64
}

export class TinySet {
  bits = 0n
  readonly salt: number
  constructor(options: { salt?: number } = {}) {
    this.salt = options.salt ?? 0
  }
  add(item: string): void {
    this.bits |= 1n << BigInt(bit(item + this.salt))
  }
  has(item: string): boolean {
    return (this.bits & (1n << BigInt(bit(item + this.salt)))) !== 0n
  }
  /** number of bits set */
  estimate(): number {
    let n = 0
    for (let b = this.bits; b; b >>= 1n) n += Number(b & 1n)
    return n
  }
  isCompatible(other: unknown): boolean {
    return other instanceof TinySet && other.salt === this.salt
  }
  union(other: TinySet): void {
    if (!this.isCompatible(other)) throw new GrudgeError('ERR_GRUDGE_MERGE_INCOMPATIBLE', 'merge: salt differs')
    this.bits |= other.bits
  }
  sizeBytes(): number {
    return 8
  }
  serialize(): Uint8Array {
    const payload = new Uint8Array(8)
    new DataView(payload.buffer).setBigUint64(0, this.bits, true)
    return writeFrame({ family: TINY_FAMILY, version: 1, flags: 0, seed: new Uint8Array(16), params: Uint8Array.of(this.salt), payload })
  }
  static deserialize(bytes: Uint8Array): TinySet {
    const f = readFrame(bytes, TINY_FAMILY, 1)
    if (f.payload.length !== 8) invalidField('payload', '8 bytes', f.payload.length)
    const s = new TinySet({ salt: f.params[0] })
    s.bits = new DataView(f.payload.buffer, f.payload.byteOffset, 8).getBigUint64(0, true)
    return s
  }
}
