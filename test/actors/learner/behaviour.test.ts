import assert from 'node:assert/strict'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import {
  connectNats,
  InProcessTransport,
  Learner,
  learnerRepliesRegistry,
  startActorSystem,
  startLearner,
} from '../../../actors/index.ts'
import { createTransformer, DEFAULT_TOKENIZER_SETTINGS, Tokenizer } from '../../../gpu/index.ts'
import {
  ErrorCode,
  LearnerCheckpoint,
  LearnerStatus,
  LearnerStep,
  MessageRegistry,
  MetricsReport,
  type PayloadOf,
  RemoteError,
  Subjects,
  type TrajectoryGroupPayload,
} from '../../../protocols/index.ts'

const tokenizer = new Tokenizer(DEFAULT_TOKENIZER_SETTINGS)
const config = {
  layers: 1,
  width: 16,
  heads: 2,
  contextLength: 8,
  vocabSize: tokenizer.vocabSize,
  mlpHidden: 32,
}
const fastRestart = {
  maxRestarts: 3,
  withinMs: 60_000,
  backoff: { initialMs: 1, maxMs: 1, factor: 1 },
  onLimit: 'stop' as const,
}

function group(id: string, length = 4): TrajectoryGroupPayload {
  const s = (first: number, reward: number) => ({
    tokens: Int32Array.from({ length }, (_, i) => (i < 2 ? i + 1 : first + i)),
    loss_mask: Uint8Array.from({ length }, (_, i) => (i < 2 ? 0 : 1)),
    logprobs: Float32Array.from({ length }, (_, i) => (i < 2 ? 0 : -5.5)),
    versions: Int32Array.from({ length }, (_, i) => (i < 2 ? -1 : 0)),
    turn_starts: Int32Array.from([2]),
    reward,
    status: 'completed' as const,
    turns: 1,
    metrics: {},
    stale_turns: 0,
  })
  return {
    group_id: id,
    task: 'toy',
    index: 0,
    seed: 0,
    difficulty: 0,
    started_version: 0,
    samples: [s(40, 1), s(60, 0)],
  }
}

const dirs: string[] = []
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true })
})

describe('actors/learner/behaviour', () => {
  it('learner actor - step, status, checkpoint and metrics over a transport; a bad batch is an invalid_message reply', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'triad-learner-actor-'))
    dirs.push(root)
    const transport = new InProcessTransport()
    const system = startActorSystem({ name: 'learner-test' })
    const reports: PayloadOf<typeof MetricsReport>[] = []
    let reported: () => void = () => {}
    const firstReport = new Promise<void>((resolve) => {
      reported = resolve
    })
    transport.subscribe(Subjects.metrics('t1', 'learner'), {
      accepts: new MessageRegistry([MetricsReport]),
      handler: (m) => {
        reports.push(m.payload as PayloadOf<typeof MetricsReport>)
        reported()
      },
    })
    const { exposed } = await startLearner(system, transport, 't1', {
      create: () =>
        Learner.create({
          model: createTransformer(config, { seed: 1 }),
          tokenizer,
          lr: 1e-3,
          checkpointDir: root,
        }),
      metrics: { transport, run: 't1', id: '0', clock: () => 1234 },
    })
    const ask = (m: Parameters<typeof transport.request>[1]) =>
      transport.request(Subjects.learner('t1'), m, { timeoutMs: 60_000, replies: learnerRepliesRegistry })

    const stepped = await ask(LearnerStep.make({ groups: [group('a')] }))
    assert.equal(stepped.type, 'learner.stepped')
    const sp = stepped.payload as { version: number; metrics: Record<string, number> }
    assert.equal(sp.version, 1)
    assert.equal(sp.metrics['reward/mean/toy'], 0.5)
    await firstReport
    assert.equal(reports[0]!.step, 1)
    assert.equal(reports[0]!.time, 1234)
    assert.equal(reports[0]!.values['learner/reward/mean/toy'], 0.5)
    assert.equal(reports[0]!.values['learner/version'], 1)

    await assert.rejects(
      () => ask(LearnerStep.make({ groups: [group('long', 12)] })),
      (e: unknown) =>
        e instanceof RemoteError && e.code === ErrorCode.InvalidMessage && /long/.test(e.message),
    )
    await assert.rejects(
      () => ask(LearnerStep.make({ groups: [] })),
      (e: unknown) => e instanceof RemoteError && e.code === ErrorCode.InvalidMessage,
    )

    const checkpointed = await ask(LearnerCheckpoint.make({}))
    const cp = checkpointed.payload as { version: number; path: string }
    assert.equal(cp.version, 1)
    assert.ok((await stat(path.join(cp.path, 'learner.json'))).isFile())
    const status = await ask(LearnerStatus.make({}))
    assert.deepEqual(
      { ...(status.payload as object), metrics: undefined },
      { version: 1, steps: 1, checkpoint: cp.path, metrics: undefined },
    )
    assert.equal(exposed.stats().invalid, 1) // the empty group list failed the schema at the boundary
    await exposed.stop()
    await system.stop()
    await transport.close()
  })

  it('learner actor - a crash restarts it from the latest checkpoint', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'triad-learner-actor-'))
    dirs.push(root)
    const transport = new InProcessTransport()
    const system = startActorSystem({ name: 'learner-crash' })
    let crashNext = false
    let created = 0
    const { ref } = await startLearner(
      system,
      transport,
      't2',
      {
        create: async () => {
          created++
          const learner = await Learner.create({
            model: createTransformer(config, { seed: 2 }),
            tokenizer,
            lr: 1e-3,
            checkpointDir: root,
            checkpointEvery: 1,
          })
          const step = learner.step.bind(learner)
          learner.step = (input) => {
            if (crashNext) throw new Error('injected crash')
            return step(input)
          }
          return learner
        },
        resumeFrom: root,
      },
      { supervision: fastRestart },
    )
    const ask = (m: Parameters<typeof transport.request>[1]) =>
      transport.request(Subjects.learner('t2'), m, { timeoutMs: 60_000, replies: learnerRepliesRegistry })
    await ask(LearnerStep.make({ groups: [group('a')] }))
    await ask(LearnerStep.make({ groups: [group('b')] }))
    crashNext = true
    await assert.rejects(
      () => ask(LearnerStep.make({ groups: [group('c')] })),
      (e: unknown) => e instanceof RemoteError && e.code === ErrorCode.HandlerFailed,
    )
    crashNext = false
    const status = (await ask(LearnerStatus.make({}))).payload as {
      version: number
      steps: number
      checkpoint: string
    }
    assert.equal(created, 2)
    assert.equal(ref.stats().restarts, 1)
    assert.equal(status.version, 2) // resumed from step-000002
    assert.equal(status.steps, 0)
    assert.equal(status.checkpoint, path.join(root, 'step-000002'))
    await system.stop()
    await transport.close()
  })

  it('learner actor - serves learner.step over the shared NATS server (typed arrays on the wire)', async () => {
    const run = `learner${process.pid}`
    const server = await connectNats({ servers: '127.0.0.1:4222', run, role: 'learner', id: '0' })
    const client = await connectNats({ servers: '127.0.0.1:4222', run, role: 'test', id: '0' })
    const system = startActorSystem({ name: 'learner-nats' })
    await startLearner(system, server, run, {
      create: () => Learner.create({ model: createTransformer(config, { seed: 3 }), tokenizer, lr: 1e-3 }),
    })
    const reply = await client.request(Subjects.learner(run), LearnerStep.make({ groups: [group('n')] }), {
      timeoutMs: 60_000,
      replies: learnerRepliesRegistry,
    })
    assert.equal((reply.payload as { version: number }).version, 1)
    await system.stop()
    await client.close()
    await server.close()
  })
})
