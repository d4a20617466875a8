import t from 'tap'
import fs, { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import fsp from 'node:fs/promises'
import { syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import { moveAside, writeFileAtomicSync, writeFrameAtomic } from '../../src/bloom/checkpoint-file.js'
import { BloomFilter } from '../../src/bloom/bloom-filter.js'

/** A filter with some bits set, big enough for several 4096-byte chunks. */
function sample(seed: number): BloomFilter {
  const f = BloomFilter.bySize({ bits: 100_003, hashes: 4, seed })
  for (let i = 0; i < 2000; i++) f.add(`k${seed}-${i}`)
  return f
}

/** Replace `obj[key]` for the length of the test, keeping the ESM namespaces of built-ins in sync. */
function patch<T extends object, K extends keyof T>(
  t: { teardown: (fn: () => void) => void },
  obj: T,
  key: K,
  value: T[K],
): void {
  const original = obj[key]
  obj[key] = value
  syncBuiltinESMExports()
  t.teardown(() => {
    obj[key] = original
    syncBuiltinESMExports()
  })
}

t.test('writeFrameAtomic: write, fsync the file, rename, then open and fsync the directory', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'a.bloom')
  const f = sample(1)
  const events: string[] = []
  const handles = new WeakMap<object, string>()
  const realOpen = fsp.open
  patch(t, fsp, 'open', (async (p: string, flags?: string, mode?: number) => {
    const h = await realOpen(p, flags, mode)
    const what = p === dir ? 'dir' : p.startsWith(path + '.tmp-') ? 'tmp' : p
    handles.set(h, what)
    events.push(`open ${what}`)
    return h
  }) as typeof fsp.open)
  const realRename = fsp.rename
  patch(t, fsp, 'rename', (async (a: string, b: string) => {
    events.push(`rename ${a.startsWith(path + '.tmp-') ? 'tmp' : a} -> ${b === path ? 'path' : b}`)
    return realRename(a, b)
  }) as typeof fsp.rename)
  const probe = await realOpen(join(dir, 'probe'), 'w')
  const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> }
  await probe.close()
  const realSync = proto.sync
  patch(t, proto, 'sync', function (this: object) {
    events.push(`sync ${handles.get(this) ?? '?'}`)
    return realSync.call(this)
  })

  await writeFrameAtomic(path, f.frameHeader(), f.payloadView(), 4096)
  t.same(events, ['open tmp', 'sync tmp', 'rename tmp -> path', 'open dir', 'sync dir'], 'the crash-safe order')
  t.same(BloomFilter.deserialize(readFileSync(path)).serialize(), f.serialize(), 'the frame on disk is the filter')
})

t.test('writeFrameAtomic: short writes are continued, never left as a hole', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'short.bloom')
  const f = sample(2)
  const probe = await fsp.open(join(dir, 'probe'), 'w')
  const proto = Object.getPrototypeOf(probe) as {
    write: (buf: Uint8Array, off: number, len: number) => Promise<{ bytesWritten: number; buffer: Uint8Array }>
  }
  await probe.close()
  const realWrite = proto.write
  // the OS may write fewer bytes than asked (a full disk, a file size limit, a signal)
  patch(t, proto, 'write', function (this: unknown, buf: Uint8Array, off: number, len: number) {
    return realWrite.call(this, buf, off, Math.min(len, 1000))
  })
  await writeFrameAtomic(path, f.frameHeader(), f.payloadView(), 4096)
  t.same(BloomFilter.deserialize(readFileSync(path)).serialize(), f.serialize(), 'complete and loadable')
})

t.test('writeFileAtomicSync: short writes are continued; the directory is fsynced', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'm.grudge')
  const bytes = sample(3).serialize()
  const realWriteSync = fs.writeSync
  patch(t, fs, 'writeSync', ((fd: number, buf: Uint8Array, off?: number, len?: number) => {
    const o = off ?? 0
    return realWriteSync(fd, buf, o, Math.min(len ?? buf.length - o, 1000))
  }) as typeof fs.writeSync)
  const opened = new Map<number, string>()
  const synced: string[] = []
  const realOpenSync = fs.openSync
  patch(t, fs, 'openSync', ((p: string, flags: string, mode?: number) => {
    const fd = realOpenSync(p, flags, mode)
    opened.set(fd, p === dir ? 'dir' : 'tmp')
    return fd
  }) as typeof fs.openSync)
  const realFsyncSync = fs.fsyncSync
  patch(t, fs, 'fsyncSync', (fd: number) => {
    synced.push(opened.get(fd) ?? '?')
    realFsyncSync(fd)
  })
  writeFileAtomicSync(path, bytes)
  t.ok(Buffer.from(bytes).equals(readFileSync(path)), 'every byte written')
  t.same(synced, ['tmp', 'dir'], 'the file, then the directory')
})

t.test('a failed write leaves the old checkpoint and no temporary file', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'keep.bloom')
  const old = sample(4)
  await writeFrameAtomic(path, old.frameHeader(), old.payloadView(), 4096)
  const before = readFileSync(path)
  const probe = await fsp.open(join(dir, 'probe'), 'w')
  const proto = Object.getPrototypeOf(probe) as { write: (...a: unknown[]) => Promise<unknown> }
  await probe.close()
  const realWrite = proto.write
  let calls = 0
  patch(t, proto, 'write', function (this: unknown, ...a: unknown[]) {
    if (++calls === 4)
      return Promise.reject(Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }))
    return realWrite.apply(this, a)
  })
  const next = sample(5)
  await t.rejects(writeFrameAtomic(path, next.frameHeader(), next.payloadView(), 4096), {
    code: 'ERR_GRUDGE_BLOOM_IO',
    message: /ENOSPC/,
  })
  t.ok(readFileSync(path).equals(before), 'the old checkpoint is intact')
  t.same(readdirSync(dir).sort(), ['keep.bloom', 'probe'], 'the temporary file is removed')
})

t.test('a directory at the checkpoint path is not replaced', async (t) => {
  const dir = t.testdir({ 'x.bloom': { inside: 'data' } })
  const path = join(dir, 'x.bloom')
  const f = sample(6)
  await t.rejects(writeFrameAtomic(path, f.frameHeader(), f.payloadView()), { code: 'ERR_GRUDGE_BLOOM_IO' })
  t.equal(readFileSync(join(path, 'inside'), 'utf8'), 'data', 'the directory and its contents are intact')
  t.same(readdirSync(dir), ['x.bloom'], 'no temporary file left')
})

t.test('two filters checkpointing at once into one directory do not share a temporary file', async (t) => {
  const dir = t.testdir()
  const fs2 = [sample(7), sample(8), sample(9)]
  const paths = ['a.bloom', 'a.bloom2', 'b.bloom'].map((n) => join(dir, n))
  // the same path twice at once as well: each write has its own temporary file
  await Promise.all([
    ...fs2.map((f, i) => writeFrameAtomic(paths[i], f.frameHeader(), f.payloadView(), 4096)),
    writeFrameAtomic(paths[0], fs2[0].frameHeader(), fs2[0].payloadView(), 4096),
  ])
  fs2.forEach((f, i) => t.same(BloomFilter.deserialize(readFileSync(paths[i])).serialize(), f.serialize(), paths[i]))
  t.same(readdirSync(dir).sort(), ['a.bloom', 'a.bloom2', 'b.bloom'])
})

t.test('moveAside renames, never deletes, and never overwrites an earlier bad file', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'bad.bloom')
  writeFileSync(path, 'first')
  const a = moveAside(path, 1000)
  writeFileSync(path, 'second')
  const b = moveAside(path, 1000)
  t.equal(a, `${path}.bad-1000`)
  t.equal(b, `${path}.bad-1000-1`)
  t.equal(readFileSync(a, 'utf8'), 'first')
  t.equal(readFileSync(b, 'utf8'), 'second')
  t.notOk(existsSync(path))
  mkdirSync(join(dir, 'sub'))
  t.throws(() => moveAside(join(dir, 'sub', 'missing'), 1), { code: 'ERR_GRUDGE_BLOOM_IO' })
})

t.test('a write that makes no progress fails with a coded error instead of spinning', async (t) => {
  const dir = t.testdir()
  const f = sample(10)
  const probe = await fsp.open(join(dir, 'probe'), 'w')
  const proto = Object.getPrototypeOf(probe) as { write: (...a: unknown[]) => Promise<unknown> }
  await probe.close()
  patch(t, proto, 'write', (...a: unknown[]) => Promise.resolve({ bytesWritten: 0, buffer: a[0] }))
  await t.rejects(writeFrameAtomic(join(dir, 'z.bloom'), f.frameHeader(), f.payloadView()), {
    code: 'ERR_GRUDGE_BLOOM_IO',
    message: /no progress/,
  })
  patch(t, fs, 'writeSync', () => 0)
  t.throws(() => writeFileAtomicSync(join(dir, 'z.grudge'), new Uint8Array(8)), {
    code: 'ERR_GRUDGE_BLOOM_IO',
    message: /no progress/,
  })
  t.same(readdirSync(dir), ['probe'], 'nothing left behind')
})
