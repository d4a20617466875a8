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
 * Open addressing with linear probing over a power-of-two table of entry numbers; the raw
 * bytes of the entries are kept in one growing byte arena. Memory grows with the distinct
 * raw addresses, as the exact reference's rows grow with the distinct keys.
 * @internal
 */
export class AddressKeys {
  /** The key of each id, in order of first appearance. */
  readonly keys: string[] = []
  /** Key string → id, consulted once per new raw address. */
  private readonly idOfKey = new Map<string, number>()
  /** Slot → entry number + 1 (0: empty). Length a power of two, at most half full. */
  private slots = new Int32Array(1 << 12)
  /** Per entry: its hash, the start and length of its bytes in the arena, its key id. */
  private hashes = new Int32Array(1 << 11)
  private starts = new Int32Array(1 << 11)
  private lengths = new Int32Array(1 << 11)
  private ids = new Int32Array(1 << 11)
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
    const mask = slots.length - 1
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const e = slots[s] - 1
      if (e < 0) return this.insert(b, start, len, h, s)
      if (this.hashes[e] === h && this.lengths[e] === len && this.sameBytes(e, b, start, len)) return this.ids[e]
    }
  }

  private sameBytes(e: number, b: Buffer, start: number, len: number): boolean {
    const a = this.arena
    const at = this.starts[e]
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
    if (e === this.hashes.length) this.growEntries()
    if (this.arenaUsed + len > this.arena.length) {
      const wider = new Uint8Array(Math.max(2 * this.arena.length, this.arenaUsed + len))
      wider.set(this.arena.subarray(0, this.arenaUsed))
      this.arena = wider
    }
    this.arena.set(b.subarray(start, start + len), this.arenaUsed)
    this.starts[e] = this.arenaUsed
    this.arenaUsed += len
    this.hashes[e] = h
    this.lengths[e] = len
    this.ids[e] = id
    this.slots[slot] = e + 1
    if (2 * this.entries > this.slots.length) this.rehash()
    return id
  }

  private growEntries(): void {
    const n = 2 * this.hashes.length
    const wider = (a: Int32Array) => {
      const w = new Int32Array(n)
      w.set(a)
      return w
    }
    this.hashes = wider(this.hashes)
    this.starts = wider(this.starts)
    this.lengths = wider(this.lengths)
    this.ids = wider(this.ids)
  }

  private rehash(): void {
    const slots = new Int32Array(2 * this.slots.length)
    const mask = slots.length - 1
    for (let e = 0; e < this.entries; e++) {
      let s = this.hashes[e] & mask
      while (slots[s] !== 0) s = (s + 1) & mask
      slots[s] = e + 1
    }
    this.slots = slots
  }
}
