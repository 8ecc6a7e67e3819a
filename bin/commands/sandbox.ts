import type { Command } from 'commander'
import { type ActorSystem, type Exposed, exposeActor, type Transport } from '../../actors/index.ts'
import { QueueGroups, Subjects } from '../../protocols/index.ts'
import {
  BackendKind,
  buildSandboxServer,
  DEFAULT_LIMITS,
  type SandboxBackend,
  type SandboxLimits,
  sandboxAccepts,
  sandboxBehaviour,
} from '../../sandboxes/index.ts'
import { CliError, UsageError } from '../errors.ts'
import { integerOption } from '../numeric-option.ts'

const int = integerOption({ min: 1 })

/**
 * Makes and starts a backend of `kind` with `limits`.
 * @throws UsageError for an unknown kind or docker mode; CliError (one line) when the docker image is
 *   missing or of another layout; whatever else the backend's `start` throws.
 */
export async function startBackend(
  kind: string,
  limits: SandboxLimits,
  image?: string,
  dockerMode = 'attach',
): Promise<SandboxBackend> {
  let backend: SandboxBackend
  if (kind === BackendKind.Local) {
    const { LocalBackend } = await import('../../sandboxes/index.ts')
    backend = new LocalBackend({ limits })
  } else if (kind === BackendKind.Docker) {
    const { DockerBackend, DockerMode } = await import('../../sandboxes/index.ts')
    const modes: readonly string[] = Object.values(DockerMode)
    if (!modes.includes(dockerMode))
      throw new UsageError(`unknown docker mode '${dockerMode}'; known: ${modes.join(', ')}`)
    backend = new DockerBackend({ limits, image, mode: dockerMode as 'attach' | 'exec' })
  } else throw new UsageError(`unknown backend '${kind}'; known: ${Object.values(BackendKind).join(', ')}`)
  await backend.start().catch(async (err: Error) => {
    const { SandboxImageError } = await import('../../sandboxes/index.ts')
    // A missing or outdated image is the user's next step, said in one line (no stack trace).
    if (err instanceof SandboxImageError) throw new CliError(err.message, { cause: err })
    throw err
  })
  return backend
}

/**
 * Puts the sandbox on NATS as an actor: `sandbox.run_code` requests on `triad.<run>.sandbox.run_code`
 * (queue group `sandbox`, so several sandboxes share the load), answered `sandbox.code_result`,
 * with a NATS service `triad-sandbox` when the transport is NATS. Replies must fit the server's
 * `max_payload` (1 MiB by default): serve with an output limit well under it.
 */
export async function exposeSandbox(
  system: ActorSystem,
  transport: Transport,
  run: string,
  backend: SandboxBackend,
  limits: SandboxLimits,
): Promise<Exposed & { stopActor(): Promise<void> }> {
  const ref = system.spawn('sandbox', sandboxBehaviour(backend), {
    concurrency: limits.concurrency + limits.maxQueue,
  })
  const exposed = await exposeActor(transport, ref, {
    subject: Subjects.sandbox(run),
    queue: QueueGroups.sandbox,
    accepts: sandboxAccepts,
    askTimeoutMs: (2 * limits.maxTimeout + 60) * 1000,
    service: {
      name: 'triad-sandbox',
      description: `code sandbox (${backend.kind}, ${backend.isolation})`,
      metadata: { run },
    },
  })
  return { ...exposed, stats: () => exposed.stats(), stopActor: () => ref.stop() }
}

/** `triad worker --role sandbox`: a sandbox on NATS only (backend from TRIAD_SANDBOX_BACKEND, default docker). */
export async function startSandboxRole(ctx: { system: ActorSystem; transport: Transport; run: string }) {
  const limits: SandboxLimits = { ...DEFAULT_LIMITS, outputBytes: 256 * 1024, fetchBytes: 256 * 1024 }
  const backend = await startBackend(process.env['TRIAD_SANDBOX_BACKEND'] ?? BackendKind.Docker, limits)
  const exposed = await exposeSandbox(ctx.system, ctx.transport, ctx.run, backend, limits)
  return {
    stop: async () => {
      await exposed.stop()
      await exposed.stopActor()
      await backend.close()
    },
  }
}

/** `triad sandbox serve` and `triad sandbox image build`. */
export function registerSandbox(program: Command): void {
  const sandbox = program.command('sandbox').description('the SandboxFusion-compatible code sandbox')
  sandbox
    .command('serve')
    .description('serve POST /run_code and GET /health over HTTP')
    .option('--port <port>', 'TCP port (0: any free port)', integerOption({ min: 0, max: 65535 }), 8080)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--backend <kind>', 'docker | local', 'docker')
    .option('--image <name>', 'docker image (default triad-sandbox:latest)')
    .option(
      '--docker-mode <mode>',
      'attach (a warm runner per container) | exec (one docker exec per job)',
      'attach',
    )
    .option(
      '--concurrency <n>',
      'jobs at once (warm containers / local slots)',
      int,
      DEFAULT_LIMITS.concurrency,
    )
    .option('--memory <mb>', 'memory limit of one job, MiB', int, DEFAULT_LIMITS.memoryMB)
    .option('--pids <n>', 'process limit of one job', int, DEFAULT_LIMITS.pids)
    .option('--output-bytes <n>', 'bytes kept of stdout and of stderr', int, DEFAULT_LIMITS.outputBytes)
    .option(
      '--recycle-after <n>',
      'docker: runs per container before it is replaced',
      int,
      DEFAULT_LIMITS.recycleAfter,
    )
    .option('--nats <url>', 'also serve sandbox.run_code over NATS at this server')
    .option('--run <id>', 'run id of the NATS subjects (triad.<run>.sandbox.run_code)', 'default')
    .option('--log', 'log every request to stderr')
    .action(async (o: Record<string, string | number | boolean>) => {
      const limits: SandboxLimits = {
        ...DEFAULT_LIMITS,
        concurrency: o['concurrency'] as number,
        memoryMB: o['memory'] as number,
        pids: o['pids'] as number,
        outputBytes: o['outputBytes'] as number,
        recycleAfter: o['recycleAfter'] as number,
      }
      const backend = await startBackend(
        String(o['backend']),
        limits,
        o['image'] as string | undefined,
        String(o['dockerMode']),
      )
      const app = buildSandboxServer({ backend, logger: Boolean(o['log']) })
      const address = await app.listen({ port: o['port'] as number, host: String(o['host']) })
      process.stderr.write(
        `triad sandbox: ${backend.kind} backend (${backend.isolation} isolation), ${limits.concurrency} slots, listening on ${address}\n`,
      )
      let nats: { stop(): Promise<void> } | undefined
      if (o['nats']) {
        const { connectNats, startActorSystem } = await import('../../actors/index.ts')
        const run = String(o['run'])
        const transport = await connectNats({
          servers: String(o['nats']),
          run,
          role: 'sandbox',
          id: `${process.pid}`,
        }).catch((err: Error) => {
          throw new CliError(err.message, { cause: err })
        })
        const system = startActorSystem({ name: `sandbox-${process.pid}` })
        const exposed = await exposeSandbox(system, transport, run, backend, limits)
        process.stderr.write(`triad sandbox: also on NATS ${o['nats']} as ${exposed.subject}\n`)
        nats = {
          stop: async () => {
            await exposed.stop()
            await system.stop()
            await transport.close()
          },
        }
      }
      const stop = async () => {
        await nats?.stop()
        await app.close()
        await backend.close()
        process.exit(0)
      }
      process.once('SIGINT', stop)
      process.once('SIGTERM', stop)
    })

  const image = sandbox.command('image').description('the docker image of the sandbox')
  image
    .command('build')
    .description('build the sandbox image locally (no registry)')
    .option('--image <name>', 'image name', 'triad-sandbox:latest')
    .action(async (o: { image: string }) => {
      const { buildSandboxImage } = await import('../../sandboxes/index.ts')
      const built = await buildSandboxImage({ image: o.image })
      process.stdout.write(`${JSON.stringify(built, null, 2)}\n`)
      for (const m of built.missing)
        process.stderr.write(
          `warning: ${m.language} cannot run: ${m.paths.join(', ')} missing; install with apt-get install ${m.packages.join(' ')}\n`,
        )
    })
}
