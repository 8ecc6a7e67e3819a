import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import Docker from 'dockerode'
import {
  type ActorSystem,
  ContainerExec,
  ContainerManager,
  InProcessTransport,
  startActorSystem,
  startEnvController,
  startEnvWorker,
  taskRegistry,
} from '../../../actors/index.ts'
import {
  ContainerError,
  ContainerLabels,
  type EnvController,
  type EnvWorker,
  ensureBusyboxImage,
  ManualClock,
  type Task,
} from '../../../actors/testing.ts'
import {
  type Envelope,
  EnvInteract,
  EnvStart,
  type EnvStarted,
  type PayloadOf,
  RemoteError,
  Subjects,
} from '../../../protocols/index.ts'
import { calls } from './fixtures.ts'

const IMAGE = 'triad-env-busybox:test'
const docker = new Docker()
const spec = { image: IMAGE, mode: 'exclusive' as const, memoryBytes: 64 * 2 ** 20, pids: 32, cpus: 0.25 }

/** Containers of a run, as docker lists them. */
async function containersOf(run: string): Promise<string[]> {
  const list = await docker.listContainers({
    all: true,
    filters: { label: [`${ContainerLabels.run}=${run}`] },
  })
  return list.map((c) => c.Id)
}

/** Waits (deadline 10 s) until docker lists no container of `run`. */
async function untilGone(run: string): Promise<void> {
  const deadline = Date.now() + 10_000
  while ((await containersOf(run)).length > 0) {
    if (Date.now() > deadline) throw new Error(`containers of ${run} still there: ${await containersOf(run)}`)
  }
}

/** A task whose sessions run shell commands in their own container. */
const shellTask: Task<{ n: number }> = {
  name: 'shell',
  description: 'runs sh -c in a container',
  tools: [
    {
      type: 'function',
      function: {
        name: 'sh',
        description: 'run a command',
        parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
      },
    },
    { type: 'function', function: { name: 'done', description: 'finish', parameters: { type: 'object' } } },
  ],
  limits: { maxTurns: 10, maxContextBytes: 10_000, maxInvalidActions: 0 },
  difficulty: { min: 1, max: 1, default: 1 },
  container: spec,
  generate: (rng) => ({ n: rng.int(0, 1e9) }),
  key: (i) => String(i.n),
  open(_instance, context) {
    const c = context?.container
    if (!c) throw new Error('no container')
    return {
      messages: [{ role: 'user', content: 'go' }],
      async call(name, args) {
        if (name === 'done') return { content: 'bye', good: true, done: true, success: true }
        const r = await c.exec(['sh', '-c', args.cmd as string])
        return { content: `${r.exitCode}:${r.stdout.trim()}`, good: r.exitCode === 0 }
      },
    }
  },
  expert: () => ({ act: async () => calls(['done', '{}']) }),
}

describe('actors/environment/container-manager - real docker', () => {
  before(async () => {
    await ensureBusyboxImage(docker, IMAGE)
  })

  it('containers - an exclusive container has no network and the limits, and is removed on release', async () => {
    const run = `ctr-a-${process.pid}`
    const m = new ContainerManager({ docker, run, clock: new ManualClock(), sweepMs: 0 })
    await m.start()
    const c = await m.acquire('shell', spec)
    const info = await docker.getContainer(c.id).inspect()
    assert.equal(info.HostConfig.NetworkMode, 'none')
    assert.equal(info.HostConfig.Memory, 64 * 2 ** 20)
    assert.equal(info.HostConfig.PidsLimit, 32)
    assert.equal(info.HostConfig.NanoCpus, 0.25e9)
    assert.equal(info.State.Running, true)
    const out = await new ContainerExec(docker)
      .handle(c)
      .exec(['sh', '-c', 'echo hi; ls /sys/class/net | wc -l'])
    assert.deepEqual(out, { exitCode: 0, stdout: 'hi\n1\n', stderr: '' })
    await m.release(c.id)
    assert.deepEqual(await containersOf(run), [])
    assert.deepEqual(m.stats(), {
      containers_created: 1,
      containers_removed: 1,
      orphans_removed: 0,
      containers_live: 0,
    })
  })

  it('containers - a shared container serves up to maxUses sessions, then a new one is made', async () => {
    const run = `ctr-b-${process.pid}`
    const m = new ContainerManager({ docker, run, clock: new ManualClock(), sweepMs: 0 })
    const shared = { ...spec, mode: 'shared' as const, maxUses: 2 }
    const a = await m.acquire('shell', shared)
    const b = await m.acquire('shell', shared)
    const c = await m.acquire('shell', shared)
    assert.equal(a.id, b.id)
    assert.notEqual(a.id, c.id)
    await m.release(a.id)
    assert.equal((await containersOf(run)).length, 2)
    await m.release(b.id)
    assert.deepEqual((await containersOf(run)).sort(), [c.id])
    await m.stop()
    assert.deepEqual(await containersOf(run), [])
  })

  it('containers - a failing health check refuses the container and leaves none behind', async () => {
    const run = `ctr-c-${process.pid}`
    const m = new ContainerManager({
      docker,
      run,
      clock: new ManualClock(),
      sweepMs: 0,
      healthTimeoutMs: 500,
    })
    await assert.rejects(
      m.acquire('shell', { ...spec, health: ['false'] }),
      (e: unknown) =>
        e instanceof ContainerError &&
        e.code === 'unavailable' &&
        /health check \["false"\] did not pass/.test(e.message),
    )
    assert.deepEqual(await containersOf(run), [])
  })

  it('containers - orphans of a killed controller are removed at the next start and by the sweep', async () => {
    const run = `ctr-d-${process.pid}`
    const killed = new ContainerManager({ docker, run, clock: new ManualClock(), sweepMs: 0 })
    await killed.acquire('shell', spec)
    await killed.acquire('shell', spec)
    // `killed` never stops: its containers are orphans for the next controller.
    const clock = new ManualClock()
    const next = new ContainerManager({ docker, run, clock, sweepMs: 1000 })
    await next.start()
    assert.deepEqual(await containersOf(run), [])
    assert.equal(next.stats().orphans_removed, 2)
    // One more orphan appears while `next` runs: the timed sweep removes it.
    await killed.acquire('shell', spec)
    const mine = await next.acquire('shell', spec)
    clock.advance(1000)
    const deadline = Date.now() + 10_000
    while ((await containersOf(run)).length !== 1 && Date.now() < deadline);
    assert.deepEqual(await containersOf(run), [mine.id])
    await next.stop()
  })

  describe('containers through the controller and a worker', () => {
    const run = `ctr-e-${process.pid}`
    let system: ActorSystem
    let transport: InProcessTransport
    let controller: EnvController
    let worker: EnvWorker
    before(async () => {
      system = startActorSystem({ name: 'ctr' })
      transport = new InProcessTransport()
      const tasks = taskRegistry([shellTask])
      controller = await startEnvController(system, transport, {
        run,
        tasks,
        checkMs: 50,
        containers: new ContainerManager({ docker, run, clock: new ManualClock(), sweepMs: 0 }),
      })
      worker = await startEnvWorker(system, transport, {
        run,
        id: 'w1',
        tasks,
        heartbeatMs: 250,
        containers: new ContainerExec(docker),
      })
      // Wait for the worker's first heartbeat to reach the controller.
      const deadline = Date.now() + 5000
      while ((controller.counts().workers_live ?? 0) < 1 && Date.now() < deadline)
        await new Promise((r) => setImmediate(r))
    })
    after(async () => {
      await worker.stop()
      await controller.stop()
      await system.stop()
      await transport.close()
    })

    it('containers - a session runs in its own container, gone after the session ends', async () => {
      const ask = (s: string, m: Envelope) => transport.request(s, m, { timeoutMs: 20_000 })
      const a = (await ask(Subjects.envStart(run), EnvStart.make({ task: 'shell' }))).payload as PayloadOf<
        typeof EnvStarted
      >
      const b = (await ask(Subjects.envStart(run), EnvStart.make({ task: 'shell' }))).payload as PayloadOf<
        typeof EnvStarted
      >
      assert.equal((await containersOf(run)).length, 2)
      const host = async (s: string) => {
        const r = await ask(
          a.worker,
          EnvInteract.make({ session: s, message: calls(['sh', '{"cmd":"echo $HOSTNAME"}']) }),
        )
        return (r.payload as { messages: { content: string }[] }).messages[0]!.content
      }
      assert.notEqual(await host(a.session), await host(b.session))
      for (const s of [a, b])
        await ask(s.worker, EnvInteract.make({ session: s.session, message: calls(['done', '{}']) }))
      await untilGone(run)
      // The counter moves once the removal call has returned, which can be just after docker
      // stops listing the container: wait for it with a deadline.
      const deadline = Date.now() + 10_000
      while (controller.counts().containers_removed < 2 && Date.now() < deadline)
        await new Promise((r) => setImmediate(r))
      assert.equal(controller.counts().containers_removed, 2)
      await assert.rejects(
        ask(a.worker, EnvInteract.make({ session: a.session, message: calls(['done', '{}']) })),
        (e: unknown) => e instanceof RemoteError && /already ended/.test(e.message),
      )
    })
  })
})
