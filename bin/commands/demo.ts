import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { Command } from 'commander'
import { connectNats, echoReplies, findNatsServer, remoteActor, startNatsServer } from '../../actors/index.ts'
import { EchoPing, Subjects } from '../../protocols/index.ts'
import { CliError } from '../errors.ts'
import { integerOption } from '../numeric-option.ts'

/**
 * `triad demo`: two actors in two OS processes talking over NATS. Starts a private nats-server
 * (unless `--nats` is given), a `triad worker --role echo` child process, and asks its echo actor
 * from this process; prints round-trip times; then kills the worker to show that requests to a dead
 * actor fail clearly by their deadline.
 */
export async function runDemo(options: { nats?: string; count: number }): Promise<void> {
  const say = (s: string) => process.stdout.write(`${s}\n`)
  let storeDir: string | undefined
  let server: Awaited<ReturnType<typeof startNatsServer>> | undefined
  if (!options.nats) {
    if (!findNatsServer())
      throw new CliError(
        'nats-server is not on PATH: install it (apt-get install nats-server) or pass --nats URL',
      )
    storeDir = mkdtempSync(join(tmpdir(), 'triad-demo-'))
    server = await startNatsServer({ storeDir })
    say(`started nats-server at ${server.url} (monitoring ${server.monitorUrl})`)
  }
  const url = options.nats ?? server!.url
  const run = 'demo'
  const bin = fileURLToPath(new URL('../triad.ts', import.meta.url))
  const worker = spawn(
    process.execPath,
    ['--import', 'tsx', bin, 'worker', '--role', 'echo', '--nats', url, '--run', run, '--id', 'echo-1'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  await new Promise<void>((resolve, reject) => {
    worker.once('exit', (code) => reject(new CliError(`the echo worker exited early (code ${code})`)))
    createInterface({ input: worker.stdout! }).on('line', (line) => {
      if (line.includes('"ready"')) resolve()
    })
  })
  say(`worker process ${worker.pid} serves the echo actor on ${Subjects.echo(run)}`)
  const transport = await connectNats({ servers: url, run, role: 'demo', id: String(process.pid) })
  const echo = remoteActor(transport, Subjects.echo(run), { replies: echoReplies })
  const times: number[] = []
  for (let seq = 0; seq < options.count; seq++) {
    const t0 = performance.now()
    const reply = await echo.ask(EchoPing.make({ seq, sentAt: Date.now(), data: `hello ${seq}` }), 5_000)
    times.push(performance.now() - t0)
    if (seq < 3)
      say(
        `  ${reply.type} seq=${(reply.payload as { seq: number }).seq} from ${(reply.payload as { by: string }).by}`,
      )
  }
  times.sort((a, b) => a - b)
  say(
    `${options.count} round trips: p50 ${times[Math.floor(times.length / 2)]!.toFixed(2)} ms, p99 ${times[Math.floor(times.length * 0.99)]!.toFixed(2)} ms`,
  )
  worker.kill('SIGKILL')
  try {
    await echo.ask(EchoPing.make({ seq: -1, sentAt: Date.now(), data: null }), 500)
  } catch (err) {
    say(`after killing the worker: ${(err as Error).name}: ${(err as Error).message}`)
  }
  await transport.close()
  await server?.stop()
  if (storeDir) rmSync(storeDir, { recursive: true, force: true })
}

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('two actors in two processes talking over NATS')
    .option('--nats <url>', 'use this NATS server instead of starting a private one')
    .option('--count <n>', 'round trips', integerOption({ min: 1 }), 200)
    .action(async (o: { nats?: string; count: number }) => runDemo({ nats: o.nats, count: o.count }))
}
