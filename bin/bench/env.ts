/**
 * `triad bench env`: sessions started per second and interactions per second through the
 * environment controller, with 64 sessions in flight per task, beside raw NATS request/reply with
 * 64 in flight in the same run (issue 4 target).
 *
 * Set-up: a NATS server of its own (or `--nats`), the controller in this process, two env worker
 * processes (`triad env worker`, capacity 256 each). For each task, 64 loops run for a fixed time;
 * a loop starts a session through the controller (`env.start`), plays it to the end with the
 * task's scripted expert (10% mistakes) sending each turn to the session's worker (`env.interact`),
 * and starts the next. The expert runs here, on the same instance the worker made (same seed).
 * The baseline is a raw request/reply of a same-sized payload against a plain NATS responder.
 */

import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import {
  connectNats,
  getTask,
  resolveInstance,
  startActorSystem,
  startEnvController,
  startNatsServer,
  TaskRng,
  tasks,
} from '../../actors/index.ts'
import {
  type ChatMessage,
  EnvCancelAll,
  EnvInteract,
  type EnvInteracted,
  EnvList,
  EnvStart,
  type EnvStarted,
  type PayloadOf,
  Subjects,
} from '../../protocols/index.ts'

const triadBin = fileURLToPath(new URL('../triad.ts', import.meta.url))

/** Percentile of sorted numbers. */
const pct = (xs: number[], p: number) =>
  xs.length ? xs[Math.min(xs.length - 1, Math.floor(p * xs.length))]! : 0
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d

export async function run(options: { nats?: string; quick?: boolean }) {
  const quick = options.quick ?? false
  const settings = {
    inFlight: 64,
    secondsPerTask: quick ? 2 : 8,
    workers: 2,
    capacityPerWorker: 256,
    difficulty: 2,
    expertErrorRate: 0.1,
    tasks: ['calc', 'maze', 'sql'],
  }
  const run = `bench${process.pid}`
  const dir = options.nats ? undefined : mkdtempSync(path.join(tmpdir(), 'triad-bench-env-'))
  const nats = options.nats ? undefined : await startNatsServer({ storeDir: dir })
  const url = options.nats ?? nats!.url
  const client = await connectNats({ servers: url, run, role: 'bench', id: 'client' })
  const system = startActorSystem({ name: 'bench-env' })
  const controller = await startEnvController(system, client, { run, tasks, checkMs: 250 })
  const children = Array.from({ length: settings.workers }, (_, i) =>
    spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        triadBin,
        'env',
        'worker',
        '--nats',
        url,
        '--run',
        run,
        '--id',
        `w${i}`,
        '--capacity',
        String(settings.capacityPerWorker),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    ),
  )
  try {
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve, reject) => {
            createInterface({ input: c.stdout! }).on('line', (l) => l.includes('"ready"') && resolve())
            c.once('exit', (code) => reject(new Error(`env worker exited with ${code}`)))
          }),
      ),
    )
    for (;;) {
      const l = (await client.request(Subjects.envAdmin(run), EnvList.make({}), { timeoutMs: 5000 }))
        .payload as {
        workers: { state: string }[]
      }
      if (l.workers.filter((w) => w.state === 'live').length === settings.workers) break
      await new Promise((r) => setTimeout(r, 50))
    }

    const perTask: Record<string, unknown> = {}
    for (const name of settings.tasks) {
      const task = getTask(name)
      const startMs: number[] = []
      const stepMs: number[] = []
      let episodes = 0
      let solved = 0
      let seed = 0
      const t0 = performance.now()
      const end = t0 + settings.secondsPerTask * 1000
      const loop = async () => {
        while (performance.now() < end) {
          const s = seed++
          const a = performance.now()
          const started = (
            await client.request(
              Subjects.envStart(run),
              EnvStart.make({ task: name, seed: s, difficulty: settings.difficulty }),
              { timeoutMs: 30_000 },
            )
          ).payload as PayloadOf<typeof EnvStarted>
          startMs.push(performance.now() - a)
          const instance = resolveInstance(
            task,
            { seed: s, difficulty: settings.difficulty },
            new TaskRng(0),
          ).instance
          const expert = task.expert(instance, {
            errorRate: settings.expertErrorRate,
            successRate: 1,
            seed: s,
          })
          const messages: ChatMessage[] = [...started.messages]
          for (;;) {
            const m = await expert.act(messages, started.tools)
            messages.push(m)
            const b = performance.now()
            const step = (
              await client.request(
                started.worker,
                EnvInteract.make({ session: started.session, message: m }),
                {
                  timeoutMs: 30_000,
                },
              )
            ).payload as PayloadOf<typeof EnvInteracted>
            stepMs.push(performance.now() - b)
            messages.push(...step.messages)
            if (step.done) {
              episodes += 1
              solved += step.reward
              break
            }
          }
        }
      }
      await Promise.all(Array.from({ length: settings.inFlight }, loop))
      const seconds = (performance.now() - t0) / 1000
      startMs.sort((x, y) => x - y)
      stepMs.sort((x, y) => x - y)
      perTask[name] = {
        sessions_started_per_s: round(startMs.length / seconds),
        interactions_per_s: round(stepMs.length / seconds),
        episodes,
        solved_fraction: round(solved / Math.max(1, episodes), 3),
        start_ms_p50: round(pct(startMs, 0.5), 2),
        start_ms_p99: round(pct(startMs, 0.99), 2),
        interact_ms_p50: round(pct(stepMs, 0.5), 2),
        interact_ms_p99: round(pct(stepMs, 0.99), 2),
        seconds: round(seconds, 2),
      }
      await client.request(Subjects.envAdmin(run), EnvCancelAll.make({}), { timeoutMs: 10_000 })
    }

    // Baseline: raw NATS request/reply, 64 in flight, a payload the size of a typical interact.
    const responder = await connectNats({ servers: url, run, role: 'bench', id: 'raw' })
    const rawSubject = `triad.${run}.bench.raw`
    responder.nc.subscribe(rawSubject, {
      callback: (_e, msg) => {
        msg.respond(msg.data)
      },
    })
    await responder.nc.flush()
    const payload = new Uint8Array(400)
    let raw = 0
    const r0 = performance.now()
    const rawEnd = r0 + (quick ? 1 : 3) * 1000
    await Promise.all(
      Array.from({ length: settings.inFlight }, async () => {
        while (performance.now() < rawEnd) {
          await client.nc.request(rawSubject, payload, { timeout: 10_000 })
          raw += 1
        }
      }),
    )
    const rawPerS = raw / ((performance.now() - r0) / 1000)
    await responder.close()

    const counts = controller.counts()
    return {
      bench: 'env',
      settings,
      raw_nats_request_reply_per_s: round(rawPerS),
      tasks: perTask,
      interactions_vs_raw: Object.fromEntries(
        Object.entries(perTask).map(([k, v]) => [
          k,
          round((v as { interactions_per_s: number }).interactions_per_s / rawPerS, 3),
        ]),
      ),
      controller_counts: counts,
    }
  } finally {
    for (const c of children) c.kill('SIGTERM')
    await Promise.all(
      children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))),
    )
    await controller.stop()
    await system.stop()
    await client.close()
    await nats?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  }
}
