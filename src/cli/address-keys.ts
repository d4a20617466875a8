import { fmix32 } from '../hash/murmur3.js'

/**
 * The replay's table of client addresses as they are written in the log (their raw bytes)
 * to small integer key ids, for the access-log replay keyed by address (`ip`, `ip24`).
 *
 * A log repeats a few thousand addresses hundreds of thousands of times. Looked up by its
 * bytes, a line's address yields its key without a string per line: the key's string (the
 * adapters' key, `keyOf(address)`) is built once, when an address is first seen, and the
 * same string and id are handed out for every later line. Several spellings of one address
 * (`::ffff:10.0.0.1` and `10.0.0.1`, or every address of one /24 under `ip24`) get the id of
 * their one key. The ids number the keys in the order they were first seen, from 0.
 *
 * Open addressing with linear probing over a power-of-two table of (hash, entry) pairs, so a
 * probe compares hashes without leaving the slot's cache line; an entry (start and length of
 * its bytes in one growing byte arena, key id) is one 16-byte record. A lookup of a known
 * address then reads three cache lines: its slot, its entry, its bytes. Memory grows with
 * the distinct raw addresses, as the exact reference's rows grow with the distinct keys.
 * @internal
 */
export class AddressKeys {
  /** The key of each id, in order of first appearance. */
  readonly keys: string[] = []
  /** Key string → id, consulted once per new raw address. */
  private readonly idOfKey = new Map<string, number>()
  /**
   * Slot s at [2s, 2s + 1]: the entry's hash, the entry's number + 1 (0: an empty slot). The
   * number of slots is a power of two, at most half of them used.
   */
  private slots = new Int32Array(2 << 12)
  /** Entry e at [4e, 4e + 3): the start and length of its bytes in the arena, its key id. */
  private records = new Int32Array(4 << 11)
  private arena = new Uint8Array(1 << 15)
  private arenaUsed = 0
  /** Raw addresses stored. */
  private entries = 0

  /**
   * @param keyOf the key of an address string (the replay's `addressKey` for its key kind)
   * @param onNewKey called once per new key id, with the key and its id, when it is first seen
   */
  constructor(
    private readonly keyOf: (address: string) => string,
    private readonly onNewKey: (key: string, id: number) => void,
  ) {}

  /**
   * The key id of the address written at `b[start..end)` (UTF-8), adding it when new.
   * @returns an integer ≥ 0; its key is `keys[id]`
   */
  idOf(b: Buffer, start: number, end: number): number {
    const len = end - start
    // FNV-1a over the bytes, then fmix32 (MurmurHash3's finalizer) so that the low bits
    // that pick the slot depend on every byte
    let h = 0x811c9dc5 | 0
    for (let i = start; i < end; i++) h = Math.imul(h ^ b[i], 16777619)
    h = fmix32(h)
    const slots = this.slots
    const mask = (slots.length >> 1) - 1
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const e = slots[2 * s + 1] - 1
      if (e < 0) return this.insert(b, start, len, h, s)
      if (slots[2 * s] === h && this.records[4 * e + 1] === len && this.sameBytes(e, b, start, len))
        return this.records[4 * e + 2]
    }
  }

  private sameBytes(e: number, b: Buffer, start: number, len: number): boolean {
    const a = this.arena
    const at = this.records[4 * e]
    for (let i = 0; i < len; i++) if (a[at + i] !== b[start + i]) return false
    return true
  }

  private insert(b: Buffer, start: number, len: number, h: number, slot: number): number {
    const address = b.toString('utf8', start, start + len)
    const key = this.keyOf(address)
    let id = this.idOfKey.get(key)
    if (id === undefined) {
      id = this.keys.length
      this.keys.push(key)
      this.idOfKey.set(key, id)
      this.onNewKey(key, id)
    }
    const e = this.entries++
    if (4 * e === this.records.length) {
      const wider = new Int32Array(2 * this.records.length)
      wider.set(this.records)
      this.records = wider
    }
    if (this.arenaUsed + len > this.arena.length) {
      const wider = new Uint8Array(Math.max(2 * this.arena.length, this.arenaUsed + len))
      wider.set(this.arena.subarray(0, this.arenaUsed))
      this.arena = wider
    }
    this.arena.set(b.subarray(start, start + len), this.arenaUsed)
    this.records[4 * e] = this.arenaUsed
    this.records[4 * e + 1] = len
    this.records[4 * e + 2] = id
    this.arenaUsed += len
    this.slots[2 * slot] = h
    this.slots[2 * slot + 1] = e + 1
    if (4 * this.entries > this.slots.length) this.rehash()
    return id
  }

  /** Twice the slots, every entry placed again by its hash. */
  private rehash(): void {
    const old = this.slots
    const slots = new Int32Array(2 * old.length)
    const mask = (slots.length >> 1) - 1
    for (let o = 0; o < old.length; o += 2) {
      if (old[o + 1] === 0) continue
      let s = old[o] & mask
      while (slots[2 * s + 1] !== 0) s = (s + 1) & mask
      slots[2 * s] = old[o]
      slots[2 * s + 1] = old[o + 1]
    }
    this.slots = slots
  }
}
