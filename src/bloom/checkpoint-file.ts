/**
 * The only file-system code of the Bloom area: crash-safe writes of grudge frames and
 * the reads, renames and directory listings that checkpoints need.
 *
 * A checkpoint is written the way databases replace a file atomically (as SQLite's and
 * LevelDB's CURRENT-file updates do): write a temporary file in the same directory, fsync
 * it, rename it over the old file (atomic on POSIX), then fsync the directory so the
 * rename itself is durable. A process killed at any instant leaves the old file or the
 * new one, each complete; at worst a stray temporary file, which the next open removes.
 */
import * as fs from 'node:fs'
import * as fsp from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import CRC32C from 'crc-32/crc32c.js'
import { GrudgeError } from '../errors.js'
import { HEADER_BYTES, MAGIC, TRAILER_BYTES } from '../format/frame.js'

/** The fixed parts of a frame whose payload is streamed. */
export interface StreamedFrameHeader {
  family: number
  version: number
  flags: number
  seed: Uint8Array
  params: Uint8Array
}

/** Default size of one asynchronous write: 1 MiB. */
export const DEFAULT_CHUNK_BYTES = 1 << 20

let tempSeq = 0

/** Name of the temporary file for `path` (same directory, so the rename is atomic). */
function tempPath(path: string): string {
  return `${path}.tmp-${process.pid}-${++tempSeq}`
}

function ioError(what: string, path: string, cause: unknown): GrudgeError {
  const reason = cause instanceof Error ? cause.message : String(cause)
  return new GrudgeError('ERR_GRUDGE_BLOOM_IO', `${what} "${path}": expected success, received ${reason}`, { cause })
}

/** The frame header and params bytes for a payload of `payloadLength` bytes. */
function headerBytes(h: StreamedFrameHeader, payloadLength: number): Uint8Array {
  const P = h.params.length
  const out = new Uint8Array(HEADER_BYTES + P)
  const dv = new DataView(out.buffer)
  out.set(MAGIC, 0)
  out[4] = h.family
  out[5] = h.version
  dv.setUint16(6, h.flags, true)
  dv.setUint32(8, P, true)
  out.set(h.seed.subarray(0, 16), 12)
  dv.setUint32(28, payloadLength % 0x100000000, true)
  dv.setUint32(32, Math.floor(payloadLength / 0x100000000), true)
  out.set(h.params, HEADER_BYTES)
  return out
}

/**
 * Write `buf[0..len)` at the handle's position, continuing after short writes: the OS may
 * write fewer bytes than asked (RLIMIT_FSIZE, a disk filling up), and a short write left
 * unnoticed would rename a truncated frame over a good checkpoint.
 */
async function writeAll(fh: fsp.FileHandle, buf: Uint8Array, len: number): Promise<void> {
  for (let off = 0; off < len;) {
    const { bytesWritten } = await fh.write(buf, off, len - off)
    if (bytesWritten <= 0) throw new Error(`write made no progress at byte ${off} of ${len}`)
    off += bytesWritten
  }
}

/** {@link writeAll}, synchronously. */
function writeAllSync(fd: number, buf: Uint8Array): void {
  for (let off = 0; off < buf.length;) {
    const n = fs.writeSync(fd, buf, off, buf.length - off)
    if (n <= 0) throw new Error(`write made no progress at byte ${off} of ${buf.length}`)
    off += n
  }
}

/** fsync a directory so a rename inside it is durable (a no-op where directories cannot be opened, e.g. Windows). */
async function syncDir(dir: string): Promise<void> {
  let dh: fsp.FileHandle | undefined
  try {
    dh = await fsp.open(dir, 'r')
    await dh.sync()
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EBADF') throw err
  } finally {
    await dh?.close()
  }
}

/**
 * Write a frame to `path` crash-safely and without stalling the event loop: the payload
 * is copied, checksummed (CRC32C, chained) and written `chunkBytes` at a time, each
 * write awaited, so other callbacks run between chunks. The payload may keep changing
 * while it is written (Bloom bits are only ever set): each chunk is copied before it is
 * checksummed, so the file is always self-consistent.
 * @param path destination file
 * @param header the frame's fixed parts
 * @param payload the payload (a live view is fine)
 * @param chunkBytes bytes per write, ≥ 1
 * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_IO` with the system error as `cause` (the
 * temporary file is removed; the old file is untouched)
 */
export async function writeFrameAtomic(
  path: string,
  header: StreamedFrameHeader,
  payload: Uint8Array,
  chunkBytes: number = DEFAULT_CHUNK_BYTES,
): Promise<void> {
  const tmp = tempPath(path)
  let fh: fsp.FileHandle | undefined
  try {
    fh = await fsp.open(tmp, 'wx', 0o644)
    const head = headerBytes(header, payload.length)
    let crc = CRC32C.buf(head, 0)
    await writeAll(fh, head, head.length)
    const chunk = new Uint8Array(Math.min(chunkBytes, Math.max(payload.length, 1)))
    for (let off = 0; off < payload.length; off += chunk.length) {
      const len = Math.min(chunk.length, payload.length - off)
      const view = len === chunk.length ? chunk : chunk.subarray(0, len)
      view.set(payload.subarray(off, off + len))
      crc = CRC32C.buf(view, crc)
      await writeAll(fh, view, len)
    }
    const trailer = new Uint8Array(TRAILER_BYTES)
    new DataView(trailer.buffer).setUint32(0, crc >>> 0, true)
    await writeAll(fh, trailer, TRAILER_BYTES)
    await fh.sync()
    await fh.close()
    fh = undefined
    await fsp.rename(tmp, path)
    await syncDir(dirname(path))
  } catch (err) {
    if (fh !== undefined) await fh.close().catch(() => {})
    await fsp.unlink(tmp).catch(() => {})
    throw ioError('write checkpoint', path, err)
  }
}

/**
 * {@link writeFrameAtomic} for small, complete frames, synchronously (manifests).
 * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_IO`
 */
export function writeFileAtomicSync(path: string, bytes: Uint8Array): void {
  const tmp = tempPath(path)
  let fd: number | undefined
  try {
    fd = fs.openSync(tmp, 'wx', 0o644)
    writeAllSync(fd, bytes)
    fs.fsyncSync(fd)
    fs.closeSync(fd)
    fd = undefined
    fs.renameSync(tmp, path)
    try {
      const dfd = fs.openSync(dirname(path), 'r')
      try {
        fs.fsyncSync(dfd)
      } finally {
        fs.closeSync(dfd)
      }
    } catch {
      // directories cannot be fsynced on some platforms (Windows); the rename stands
    }
  } catch (err) {
    if (fd !== undefined) fs.closeSync(fd)
    try {
      fs.unlinkSync(tmp)
    } catch {
      // already gone
    }
    throw ioError('write', path, err)
  }
}

/**
 * The bytes of `path`, or null when it does not exist.
 * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_IO` for any other failure
 */
export function readFileOrNull(path: string): Uint8Array | null {
  try {
    return fs.readFileSync(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw ioError('read checkpoint', path, err)
  }
}

/**
 * Rename a bad checkpoint aside to `<path>.bad-<ms>[-n]`, never deleting it.
 * @returns the new path
 * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_IO`
 */
export function moveAside(path: string, nowMs: number): string {
  let target = `${path}.bad-${nowMs}`
  for (let n = 1; fs.existsSync(target); n++) target = `${path}.bad-${nowMs}-${n}`
  try {
    fs.renameSync(path, target)
  } catch (err) {
    throw ioError('move aside', path, err)
  }
  return target
}

/**
 * Remove temporary files a killed writer left beside `path` (`<name>.tmp-<pid>-<n>`).
 * They are never a checkpoint: the checkpoint only ever appears by rename.
 */
export function removeStaleTemps(path: string): void {
  const dir = dirname(path)
  const prefix = basename(path) + '.tmp-'
  let names: string[]
  try {
    names = fs.readdirSync(dir)
  } catch {
    return
  }
  for (const n of names) {
    if (n.startsWith(prefix) && /^\d+-\d+$/.test(n.slice(prefix.length))) {
      try {
        fs.unlinkSync(join(dir, n))
      } catch {
        // raced with another cleanup; fine
      }
    }
  }
}

/**
 * Create `dir` (and parents) if missing.
 * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_IO`
 */
export function ensureDir(dir: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true })
  } catch (err) {
    throw ioError('create directory', dir, err)
  }
}

/**
 * The entry names of `dir` ([] when it does not exist).
 * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_IO` for other failures
 */
export function listDir(dir: string): string[] {
  try {
    return fs.readdirSync(dir)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw ioError('list directory', dir, err)
  }
}
