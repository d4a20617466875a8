// A bad seed was echoed back in the error (`received "abc"`): a seed keys the hash, so an
// error message that reaches a log must give its kind and length, never its content.
import t from 'tap'
import { Sketch } from '../../src/sketch/sketch.js'
import { sipHash } from '../../src/hash/hasher.js'
import { redisStore } from '../../src/cluster/redis-store.js'

const secret = 'not-hex-s3cr3t-4f2a'

const rows: [string, () => unknown][] = [
  ['Sketch seed', () => new Sketch({ seed: secret as never })],
  ['sipHash seed', () => sipHash(secret)],
  ['a 31-digit hex seed', () => new Sketch({ seed: '0123456789abcdef0123456789abcde' as never })],
  ['redisStore seed', () => redisStore({ redis: 'redis://127.0.0.1:1', seed: secret })],
]
for (const [name, build] of rows) {
  t.test(name, async (t) => {
    let message = ''
    try {
      build()
    } catch (e) {
      message = (e as Error).message
    }
    t.match(message, /option "seed": expected .*, received a string of \d+ (hex digits|characters)/, message)
    t.notMatch(message, /s3cr3t|0123456789abcdef/, 'the value itself is not in the message')
  })
}
