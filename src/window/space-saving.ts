import { invalidOption } from '../errors.js'

/** Largest count a `SpaceSaving` counter holds (a Uint32 counter; adds past it are ignored). */
export const SPACE_SAVING_MAX_COUNT = 0xffffffff

/** The most counters a `SpaceSaving` summary takes (its index and heap positions are 16-bit). */
export const SPACE_SAVING_MAX_COUNTERS = 1 << 14

/**
 * Bytes a `SpaceSaving` of `counters` counters holds, whatever the stream: per counter the
 * key's two 32-bit halves, its count and its error (4 B each), its heap slot and heap position
 * (2 B each), and the index's slots of 2 B (the power of two ≥ twice the counters): 3,072 B at
 * 128 counters.
 * @param counters m, an integer in [1, 2^14]
 * @internal
 */
export function spaceSavingBytes(counters: number): number {
  return counters * (4 * 4 + 2 * 2) + indexSlots(counters) * 2
}

/** The open-addressing index's slots: the power of two ≥ 2m (load ≤ 1/2, so probes stay short). */
function indexSlots(counters: number): number {
  let n = 2
  while (n < 2 * counters) n *= 2
  return n
}

/** The index slot a key hashes to (before probing): its halves mixed, masked. */
function home(hi: number, lo: number, mask: number): number {
  return (lo ^ Math.imul(hi, 0x9e3779b1)) & mask
}

/**
 * A Space-Saving summary of the most frequent 64-bit keys of a stream (Metwally, Agrawal & El
 * Abbadi, "Efficient computation of frequent and top-k elements in data streams", ICDT 2005):
 * m counters, each a monitored key with a count and an error ε. A monitored key's add raises its
 * count; an unmonitored key's add takes the counter of the least count min, which becomes the
 * new key's, with count min + 1 and ε = min (what the evicted key may have had of it).
 *
 * The paper's guarantee, for a stream of n adds (Lemma 3.3, Theorem 3.5): the counts sum to n;
 * min ≤ n / m; a monitored key's true frequency f lies in [count − ε, count], with ε ≤ min ≤ n / m
 * (so the overestimate is at most n / m); and every key with f > min (so every key with
 * f > n / m) is monitored. A key that is not monitored has f ≤ min.
 *
 * Keys are 64-bit hashes given as two int32 halves (a Hasher's `hashHi`, `hashLo`): no strings
 * are kept; two keys with the same hash count as one. Constant memory (`spaceSavingBytes`,
 * 3 KiB at 128 counters) and no allocation per add: the counters sit in typed arrays, found
 * through an open-addressing index (linear probing, deletion by backward shift, Knuth's
 * Algorithm R) and ordered by a binary min-heap of counts, so an add costs O(log m). (The
 * paper's Stream-Summary list gives O(1) for unit adds; the heap is simpler, and at m = 128 it
 * is at most 7 swaps.)
 * @internal
 */
export class SpaceSaving {
  /** m, the counters: an integer in [1, 2^14]. */
  readonly counters: number
  private readonly hi: Int32Array
  private readonly lo: Int32Array
  private readonly counts: Uint32Array
  private readonly errors: Uint32Array
  /** The min-heap of counter numbers by count (heap[0] holds the least). */
  private readonly heap: Uint16Array
  /** Each counter's position in `heap`. */
  private readonly heapPos: Uint16Array
  /** Open-addressing index by key hash: counter number + 1, 0 for an empty slot. */
  private readonly index: Uint16Array
  private readonly mask: number
  private used = 0
  private added = 0

  /**
   * An empty summary.
   * @param counters m, an integer in [1, 2^14]; every key with more than n / m of n adds is kept
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `counters` when it is not such an integer
   */
  constructor(counters: number) {
    if (!Number.isInteger(counters) || counters < 1 || counters > SPACE_SAVING_MAX_COUNTERS)
      invalidOption('counters', `an integer in [1, ${SPACE_SAVING_MAX_COUNTERS}]`, counters)
    this.counters = counters
    this.hi = new Int32Array(counters)
    this.lo = new Int32Array(counters)
    this.counts = new Uint32Array(counters)
    this.errors = new Uint32Array(counters)
    this.heap = new Uint16Array(counters)
    this.heapPos = new Uint16Array(counters)
    const slots = indexSlots(counters)
    this.index = new Uint16Array(slots)
    this.mask = slots - 1
  }

  /** Counters in use (monitored keys), in [0, m]. */
  get size(): number {
    return this.used
  }

  /** n, the adds since the last `SpaceSaving.clear` (an add to a counter at `SPACE_SAVING_MAX_COUNT` is not counted). */
  get total(): number {
    return this.added
  }

  /** The least count of a monitored key when all m counters are in use, else 0: the most an unmonitored key can have had. */
  get minCount(): number {
    return this.used < this.counters ? 0 : this.counts[this.heap[0]]
  }

  /**
   * Count one occurrence of the key (hi, lo). No allocation.
   * @param hi the key hash's high 32 bits (int32 or uint32)
   * @param lo its low 32 bits
   */
  add(hi: number, lo: number): void {
    const h = hi | 0
    const l = lo | 0
    let slot = this.find(h, l)
    const at = this.index[slot]
    if (at !== 0) {
      const c = at - 1
      if (this.counts[c] === SPACE_SAVING_MAX_COUNT) return
      this.counts[c]++
      this.added++
      this.siftDown(this.heapPos[c])
      return
    }
    this.added++
    if (this.used < this.counters) {
      const c = this.used++
      this.hi[c] = h
      this.lo[c] = l
      this.counts[c] = 1
      this.errors[c] = 0
      this.index[slot] = c + 1
      this.heap[c] = c
      this.heapPos[c] = c
      this.siftUp(c)
      return
    }
    // the least counter takes the new key: count min + 1, error min
    const c = this.heap[0]
    this.unindex(this.hi[c], this.lo[c])
    // the deletion may have shifted entries: look the new key's empty slot up again
    slot = this.find(h, l)
    const min = this.counts[c]
    this.hi[c] = h
    this.lo[c] = l
    this.errors[c] = min
    if (min < SPACE_SAVING_MAX_COUNT) this.counts[c] = min + 1
    this.index[slot] = c + 1
    this.siftDown(0)
  }

  /**
   * Whether the key (hi, lo) is monitored (holds a counter).
   * @param hi the key hash's high 32 bits
   * @param lo its low 32 bits
   */
  has(hi: number, lo: number): boolean {
    return this.index[this.find(hi | 0, lo | 0)] !== 0
  }

  /**
   * The key's count: an upper bound of its frequency (the paper's count); for an unmonitored key
   * `SpaceSaving.minCount`, the most it can have had.
   * @param hi the key hash's high 32 bits
   * @param lo its low 32 bits
   */
  count(hi: number, lo: number): number {
    const at = this.index[this.find(hi | 0, lo | 0)]
    return at === 0 ? this.minCount : this.counts[at - 1]
  }

  /**
   * The key's guaranteed frequency, count − ε: a lower bound of its true frequency (0 when it is not monitored).
   * @param hi the key hash's high 32 bits
   * @param lo its low 32 bits
   */
  guaranteed(hi: number, lo: number): number {
    const at = this.index[this.find(hi | 0, lo | 0)]
    return at === 0 ? 0 : this.counts[at - 1] - this.errors[at - 1]
  }

  /**
   * The count of counter `i` (in [0, size), in no particular order): see `SpaceSaving.count`.
   * @param i a counter number below `SpaceSaving.size` (0 past it)
   */
  countAt(i: number): number {
    return i < this.used ? this.counts[i] : 0
  }

  /**
   * The guaranteed frequency of counter `i`'s key, count − ε: see `SpaceSaving.guaranteed`.
   * @param i a counter number below `SpaceSaving.size` (0 past it)
   */
  guaranteedAt(i: number): number {
    return i < this.used ? this.counts[i] - this.errors[i] : 0
  }

  /**
   * The high 32 bits (int32) of counter `i`'s key hash.
   * @param i a counter number below `SpaceSaving.size`
   */
  hiAt(i: number): number {
    return this.hi[i]
  }

  /**
   * The low 32 bits (int32) of counter `i`'s key hash.
   * @param i a counter number below `SpaceSaving.size`
   */
  loAt(i: number): number {
    return this.lo[i]
  }

  /** Forget every key (no allocation). */
  clear(): void {
    this.used = 0
    this.added = 0
    this.index.fill(0)
  }

  /** Memory held in bytes (`spaceSavingBytes`: 3,072 at 128 counters). */
  sizeBytes(): number {
    return (
      this.hi.byteLength +
      this.lo.byteLength +
      this.counts.byteLength +
      this.errors.byteLength +
      this.heap.byteLength +
      this.heapPos.byteLength +
      this.index.byteLength
    )
  }

  /** The index slot holding (hi, lo), or the empty slot where it would go. */
  private find(hi: number, lo: number): number {
    let s = home(hi, lo, this.mask)
    for (;;) {
      const at = this.index[s]
      if (at === 0 || (this.lo[at - 1] === lo && this.hi[at - 1] === hi)) return s
      s = (s + 1) & this.mask
    }
  }

  /** Delete (hi, lo) from the index by backward shift (linear probing's deletion without tombstones). */
  private unindex(hi: number, lo: number): void {
    const mask = this.mask
    let hole = this.find(hi, lo)
    this.index[hole] = 0
    let s = (hole + 1) & mask
    for (;;) {
      const at = this.index[s]
      if (at === 0) return
      const k = home(this.hi[at - 1], this.lo[at - 1], mask)
      // the entry at s moves into the hole unless its home lies cyclically in (hole, s]
      if (((s - k) & mask) >= ((s - hole) & mask)) {
        this.index[hole] = at
        this.index[s] = 0
        hole = s
      }
      s = (s + 1) & mask
    }
  }

  private siftUp(p: number): void {
    const heap = this.heap
    const counts = this.counts
    const c = heap[p]
    const v = counts[c]
    while (p > 0) {
      const parent = (p - 1) >> 1
      const q = heap[parent]
      if (counts[q] <= v) break
      heap[p] = q
      this.heapPos[q] = p
      p = parent
    }
    heap[p] = c
    this.heapPos[c] = p
  }

  private siftDown(p: number): void {
    const heap = this.heap
    const counts = this.counts
    const n = this.used
    const c = heap[p]
    const v = counts[c]
    for (;;) {
      let child = 2 * p + 1
      if (child >= n) break
      if (child + 1 < n && counts[heap[child + 1]] < counts[heap[child]]) child++
      const q = heap[child]
      if (counts[q] >= v) break
      heap[p] = q
      this.heapPos[q] = p
      p = child
    }
    heap[p] = c
    this.heapPos[c] = p
  }
}
