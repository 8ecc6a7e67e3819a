import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Svcm } from '@nats-io/services'
import { connectNats, type NatsTransport } from '../../actors/index.ts'
import { ErrorCode, encode, PROTOCOL_VERSION, RemoteError } from '../../protocols/index.ts'
import { pathWithNatsServer } from '../support/nats-path.ts'
import { RUN_STARTED, startTriad } from '../support/triad-process.ts'
import { within } from '../support/within.ts'

/** The NATS services of a tiny run. */
const EXPECTED_SERVICES = [
  'triad-learner',
  'triad-env-controller',
  'triad-env-admin',
  'triad-env-worker',
  'triad-env-adapter',
  'triad-policy',
  'triad-policy-stale',
  'triad-reward',
]

/**
 * Steps of the flooded run: recipes/tiny.ts's 3 ended before the flood's first round on a fast
 * machine (its services gone: no responders), so the run here takes more.
 */
const STEPS = 24

/** recipes/tiny.ts with `STEPS` steps and room in its time budget, written into `dir`. */
function floodRecipe(dir: string): string {
  const recipes = fileURLToPath(new URL('../../recipes/', import.meta.url))
  const file = join(dir, 'flood-tiny.ts')
  writeFileSync(
    file,
    `import { defineRecipe } from ${JSON.stringify(join(recipes, 'define-recipe.ts'))}\n` +
      `import { tinyInput } from ${JSON.stringify(join(recipes, 'tiny.ts'))}\n` +
      `export default defineRecipe({ ...tinyInput, budget: { maxSteps: ${STEPS}, maxMinutes: 10 } })\n`,
  )
  return file
}

/** Rounds of the flood: each sends one request to every service subject of the run. */
const ROUNDS = 4

/**
 * The endpoint subjects of every NATS service of `run` that answers `$SRV.INFO` within 500 ms, by
 * service name.
 */
async function runServices(client: NatsTransport, run: string): Promise<Map<string, string[]>> {
  const svc = new Svcm(client.nc as never).client({ strategy: 'timer', maxWait: 500 })
  const out = new Map<string, string[]>()
  try {
    for await (const s of await svc.info())
      if (s.metadata?.run === run)
        out.set(s.name, [...(out.get(s.name) ?? []), ...(s.endpoints ?? []).map((e) => e.subject)])
  } catch (err) {
    if (!/no responders/i.test(String((err as Error)?.message))) throw err
  }
  return out
}

/**
 * A request of exactly `bytes` bytes with an unknown message type of about 1 MB: the error reply
 * quotes the type, so it is over the limit when the request is just under it.
 */
function hugeUnknownType(bytes: number): Uint8Array {
  const make = (n: number) => encode({ v: PROTOCOL_VERSION, type: 'x'.repeat(n), payload: {} })
  const n = bytes - 200
  const out = make(n + bytes - make(n).byteLength)
  assert.equal(out.byteLength, bytes)
  return out
}

/**
 * End to end under attack: while `triad run recipes/tiny.ts` runs, every service subject of the run
 * gets requests whose error replies would be over the server's `max_payload`
 * (docs/design.md#messaging-and-wire-protocol: no message from the bus may stop a process). Each
 * gets a `reply_too_large` error reply, no role restarts, and the run reaches its step budget.
 */
describe('e2e - triad run recipes/tiny.ts flooded with requests whose replies are over max_payload', () => {
  it('e2e - every service subject answers reply_too_large, no process restarts, the run finishes its steps', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-flood-'))
    const run = startTriad(['run', floodRecipe(runsDir), '--runs-dir', runsDir], {
      PATH: pathWithNatsServer(),
    })
    try {
      const [, id, dir] = (await run.waitForText(RUN_STARTED, 60_000)) as unknown as [string, string, string]
      const url = (await run.waitForText(/^embedded nats-server at (nats:\/\/[^,\s]+),/, 60_000))[1]!
      const client = await connectNats({ servers: url, run: id, role: 'flood', id: '0' })
      try {
        const limit = client.maxPayload()!
        // Every service of both roles: the learner's and the rollout's (environment, engines, reward
        // model, env adapter); the engines come once the SFT's weights are out.
        let services = new Map<string, string[]>()
        await within(
          (async () => {
            while (!EXPECTED_SERVICES.every((name) => services.has(name)))
              services = await runServices(client, id)
          })(),
          120_000,
          () => `the run's services (found ${[...services.keys()].join(', ')})`,
        )
        const subjects = [...new Set([...services.values()].flat())]
        const bytes = hugeUnknownType(limit - 8)
        const ask = (subject: string) =>
          client.requestBytes(subject, bytes, { timeoutMs: 10_000, retryNoResponders: false }).then(
            () => 'ok',
            (err: unknown) => (err instanceof RemoteError ? err.code : String(err)),
          )
        // The first round goes to every subject at once, while the run surely serves them all (its 3
        // steps can end within a round sent one request at a time); later rounds, one at a time, may
        // find the run stopping.
        const first = await Promise.all(subjects.map(ask))
        const answers: Record<string, string> = Object.fromEntries(subjects.map((s, i) => [s, first[i]!]))
        for (let round = 1; round < ROUNDS; round++) for (const subject of subjects) await ask(subject)
        assert.deepEqual(
          answers,
          Object.fromEntries(subjects.map((s) => [s, ErrorCode.ReplyTooLarge])),
          `services: ${JSON.stringify(Object.fromEntries(services))}`,
        )
      } finally {
        await client.close()
      }
      const { code } = await within(run.exited, 240_000, () => run.stdout.join('\n'))
      assert.equal(code, 0, run.stderr())
      assert.ok(
        run.stdout.some((l) => l.includes(`stopping (${STEPS} steps done)`)),
        run.stdout.join('\n'),
      )
      const stop = readFileSync(join(dir, 'logs', 'run.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { event: string; restarts?: Record<string, number> })
        .find((e) => e.event === 'stop')
      assert.deepEqual(stop?.restarts, { learner: 0, rollout: 0 })
    } finally {
      await run.kill('SIGKILL')
    }
  })
})
