// An operator reads why Redis failed in words, never ioredis's internal wording: the offline
// queue's "Stream isn't writeable" (what a command meets while the connection is down) becomes
// "not connected", and socket error codes become their meaning (issue #16).
import t from 'tap'
import { describeConnectError } from '../../src/cluster/client.js'

t.test('connection errors in an operator’s words', async (t) => {
  const offline = new Error("Stream isn't writeable and enableOfflineQueue options is false")
  t.match(describeConnectError(offline), /^not connected/)
  t.notMatch(describeConnectError(offline), /Stream|enableOfflineQueue/)
  t.equal(
    describeConnectError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    'connection refused (ECONNREFUSED)',
  )
  t.equal(describeConnectError(new Error('something else')), 'something else')
})
