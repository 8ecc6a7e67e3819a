import { hostname } from 'node:os'
import {
  CHILD_STOP_WATCHDOG_MS,
  childFailureLine,
  connectNats,
  createRoleLogger,
  startActorSystem,
} from '../../actors/index.ts'
import { startCpuProfile } from '../cpu-profile.ts'
import { CliError, UsageError } from '../errors.ts'
import { readNodeConfig } from './node-config-file.ts'
import type { RoleHandle, WorkerRoles } from './role.ts'

/**
 * Runs one role in this process until SIGTERM/SIGINT: connects to NATS as
 * `triad:<run>:<role>:<id>`, starts the role, prints one JSON line `{"event":"ready",...}` on
 * stdout, then serves. A role that fails to start, or whose work fails, prints one JSON line
 * `{"event":"failed","error":...,"restart":...}` on stdout (`childFailureLine`: what a supervisor
 * reports when it gives up on this process, and whether a restart can help) and the process exits 1. SIGTERM or SIGINT
 * while it still connects or starts is a stop too: the role finishes starting and then stops. A
 * stop that takes longer than `CHILD_STOP_WATCHDOG_MS` from the signal ends the process
 * with code 1 and a line `triad worker: <role> did not stop within <s> s; exiting` on stderr; a
 * stop that ends logs `triad worker: <role> stopped (role <ms> ms, actors <ms> ms, NATS <ms> ms)`.
 * With `TRIAD_CPU_PROFILE=<dir>` in the environment the process records a CPU profile and writes
 * it to `<dir>/<role>-<pid>.cpuprofile` when it stops (`startCpuProfile`).
 * @param roles where `role` is looked up (`workerRoles` of `triad worker`; a command that starts one
 *   role passes that one; tests add roles of their own).
 * @throws CliError on an unknown role or a NATS server that does not answer.
 */
export async function runWorker(
  role: string,
  options: { nats: string; run: string; id?: string; config?: string },
  roles: WorkerRoles,
): Promise<void> {
  const start = roles[role]
  if (!start) throw new UsageError(`unknown role '${role}'; known roles: ${Object.keys(roles).join(', ')}`)
  // A node config names its run: the subjects follow it unless --run says otherwise.
  if (options.config && options.run === 'default') options.run = readNodeConfig(options).run
  const id = options.id ?? `${hostname()}-${process.pid}`
  // One JSON line per message on stderr, which the supervisor appends to logs/<role>.log.
  const logger = createRoleLogger({ role, id, run: options.run }, 2)
  // The stop signals are taken from the start: a supervisor may send SIGTERM while this process
  // still connects or starts its role (a run stopped right after it restarted one), and a signal
  // with no handler kills the process by its default action instead of a clean stop. `on`, not
  // `once`: a second signal during the stop (Ctrl-C reaches the whole process group, then
  // `triad run` sends SIGTERM) must not kill the process mid-stop either.
  let askStop = () => {}
  const stopAsked = new Promise<void>((resolve) => {
    askStop = resolve
  })
  process.on('SIGTERM', () => askStop())
  process.on('SIGINT', () => askStop())
  // Shutdown is bounded from the moment it is asked (even mid-start): a role that cannot stop
  // cleanly (NATS unreachable, a stuck handler, a start that does not end) must not keep the
  // process alive. The bound is shorter than the supervisor's grace before SIGKILL, so a stuck
  // stop says so and exits 1 instead of vanishing.
  let watchdog: NodeJS.Timeout | undefined
  void stopAsked.then(() => {
    watchdog = setTimeout(() => {
      logger.fatal(`triad worker: ${role} did not stop within ${CHILD_STOP_WATCHDOG_MS / 1000} s; exiting`)
      process.exit(1)
    }, CHILD_STOP_WATCHDOG_MS)
    watchdog.unref()
  })
  const transport = await connectNats({ servers: options.nats, run: options.run, role, id }).catch(
    (err: Error) => {
      throw new CliError(err.message, { cause: err })
    },
  )
  const profileDir = process.env.TRIAD_CPU_PROFILE
  const profile = profileDir ? await startCpuProfile(profileDir, `${role}-${process.pid}`) : undefined
  const system = startActorSystem({ name: `${role}-${id}` })
  system.onEscalate((e) =>
    logger.error(`triad worker: ${e.path} failed past its restart limit: ${String(e.error)}`),
  )
  let handle: RoleHandle
  try {
    handle = await start({ system, transport, run: options.run, id, options, logger })
  } catch (err) {
    process.stdout.write(`${childFailureLine(err)}\n`)
    throw err
  }
  // A role whose work ends by itself (the learner at its last step) ends the process.
  const finished = (handle as { done?: Promise<void> }).done
  finished?.then(askStop, (err: Error) => {
    logger.error({ err }, `triad worker: ${role} failed: ${err.message}`)
    process.stdout.write(`${childFailureLine(err)}\n`)
    process.exitCode = 1
    askStop()
  })
  process.stdout.write(
    `${JSON.stringify({ event: 'ready', role, run: options.run, id, pid: process.pid })}\n`,
  )
  await stopAsked
  // Each phase of the stop is timed, so a slow stop says where its time went.
  const phases: string[] = []
  const timed = async (name: string, phase: () => Promise<void>) => {
    const t0 = Date.now()
    await phase()
    phases.push(`${name} ${Date.now() - t0} ms`)
  }
  await timed('role', () => handle.stop())
  await timed('actors', () => system.stop())
  await timed('NATS', () => transport.close())
  logger.info(`triad worker: ${role} stopped (${phases.join(', ')})`)
  if (profile) logger.info(`triad worker: ${role} CPU profile in ${await profile.stop()}`)
  clearTimeout(watchdog)
}
