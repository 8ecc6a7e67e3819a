import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  connectNats,
  fetchRunTokenizer,
  InProcessTransport,
  type NatsServer,
  startNatsServer,
  type Transport,
} from '../../../actors/index.ts'
import { publishRunTokenizer } from '../../../actors/testing.ts'
import { learnTaskTokenizer } from '../../../gpu/index.ts'

/** Two parties of one run (learner and rollout): two connections, or two roles on one in-process transport. */
interface Medium {
  learner: Transport
  rollout: Transport
  close(): Promise<void>
}

function suite(name: string, open: () => Promise<Medium>) {
  describe(`actors/node/run-tokenizer - ${name}`, () => {
    let m: Medium
    before(async () => {
      m = await open()
    })
    after(async () => {
      await m.close()
    })

    it('run-tokenizer - the rollout side waits for the tokenizer and gets the learner one, merges and all', async () => {
      const tokenizer = learnTaskTokenizer(['add 12 and 34', 'add 12 and 56', 'add 12 and 78'], 4)
      assert.ok(
        tokenizer.vocabSize > new (tokenizer.constructor as new () => { vocabSize: number })().vocabSize,
      )
      const fetching = fetchRunTokenizer(m.rollout, 'tok', 10_000)
      await publishRunTokenizer(m.learner, 'tok', tokenizer)
      const fetched = await fetching
      assert.equal(fetched.vocabSize, tokenizer.vocabSize)
      assert.deepEqual(fetched.settings, tokenizer.settings)
    })

    it('run-tokenizer - no tokenizer in time is an error naming the run', async () => {
      await assert.rejects(
        fetchRunTokenizer(m.rollout, 'absent', 300),
        /run absent: no tokenizer published within 300 ms/,
      )
    })
  })
}

suite('over NATS (object store)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'triad-tok-'))
  const nats: NatsServer = await startNatsServer({ storeDir: dir, monitorPort: false })
  const learner = await connectNats({ servers: nats.url, run: 'tok', role: 'learner', id: '0' })
  const rollout = await connectNats({ servers: nats.url, run: 'tok', role: 'rollout', id: '0' })
  return {
    learner,
    rollout,
    close: async () => {
      await learner.close()
      await rollout.close()
      await nats.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
})

suite('in process', async () => {
  const t = new InProcessTransport()
  return { learner: t, rollout: t, close: () => t.close() }
})
