import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { accessSync, constants, mkdirSync, statSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import type { Millis } from '../../protocols/index.ts'
import { dieWithParent, OWN_PROCESS_GROUP } from '../runtime/index.ts'
import { NatsServerError } from './errors.ts'
import { freePort } from './free-port.ts'
import { checkStoreFree, removeStoreLock, writeStoreLock } from './nats-store-lock.ts'

/** Options of `startNatsServer`. */
export interface NatsServerOptions {
  /** JetStream store directory (created); JetStream is off when absent. */
  storeDir?: string
  /** Client port; a free one when absent. Kept across `restart`. */
  port?: number
  /** Monitoring port (`/varz`, `/connz`, ...); a free one when absent; `false` for none. */
  monitorPort?: number | false
  /** The binary; `nats-server` on PATH (or /usr/sbin/nats-server) when absent. */
  binary?: string
  /** How long to wait for "Server is ready", ms (default 10,000). */
  readyTimeoutMs?: Millis
  /**
   * Finds a free port for `port` and `monitorPort` when they are absent (default `freePort`). Tests
   * hand out a port they hold, to make the server's bind fail.
   */
  pickPort?: () => Promise<number>
}

/**
 * How many times `startNatsServer` starts the server on newly picked ports when one it picked was
 * taken between the pick and the server's bind (another process bound it first).
 */
export const NATS_BIND_ATTEMPTS = 5

/** The port of a failed bind in nats-server's log (`listen tcp 127.0.0.1:4222: bind: address already in use`). */
export function portInUse(log: string): number | undefined {
  const m = /listen tcp [^\s]*:(\d+): bind: address already in use/.exec(log)
  return m ? Number(m[1]) : undefined
}

/**
 * A nats-server child process that tests and `triad run` own. It ends with its owner: on Linux the
 * kernel sends it SIGTERM when the owning process dies, `kill -9` included (`dieWithParent`).
 */
export interface NatsServer {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string
  /** `http://127.0.0.1:<monitorPort>`, when monitoring is on. */
  readonly monitorUrl?: string
  readonly port: number
  /** The process id of the current server process. */
  pid(): number | undefined
  /** SIGKILLs the server (a crash); `restart` brings it back on the same ports and store. */
  kill(): Promise<void>
  /** Starts the server again after `kill` or `stop`. */
  restart(): Promise<void>
  /** Stops the server gracefully (SIGTERM, then SIGKILL after `NATS_STOP_GRACE_MS`) and waits for its exit. */
  stop(): Promise<void>
  /**
   * Calls `listener` each time the server process exits unasked (a crash, `kill -9` from outside),
   * after it was ready; not for `stop` or `kill`. `superviseNatsServer` restarts it from there.
   */
  onExit(listener: (exit: NatsServerExit) => void): void
  /**
   * Calls `listener` with the first line of each server process's log that says its JetStream
   * store cannot be written (`no space left on device`, `out of resources`, `JetStream resource
   * limits exceeded for server`: its limit is sized from the disk's free space at its start): the
   * store is on a full disk and publishes fail, so the run cannot go on. A server wedged on a full
   * disk may say nothing: the run's other writers on the same disk report it then.
   */
  onStoreError(listener: (line: string) => void): void
}

/** A nats-server log line that says its JetStream store cannot be written. */
export const NATS_STORE_ERROR =
  /no space left on device|out of resources|resource limits exceeded|disk quota exceeded|read-only file system/i

/**
 * How long `NatsServer.stop` waits after SIGTERM before it sends SIGKILL, ms: a server whose
 * JetStream store is on a full disk can ignore SIGTERM, and the stop still ends.
 */
export const NATS_STOP_GRACE_MS: Millis = 5_000

/** How a server process ended, as `NatsServer.onExit` reports it. */
export interface NatsServerExit {
  pid: number
  code: number | null
  signal: NodeJS.Signals | null
}

/**
 * The `nats-server` on PATH (an executable file of that name in one of PATH's directories), or
 * undefined. `triad run` starts its embedded server only from PATH: without one it runs in one
 * process, and says so (`findNatsServer` also looks in the usual install folders, for tests).
 */
export function natsServerOnPath(path: string = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue
    const candidate = join(dir, 'nats-server')
    try {
      accessSync(candidate, constants.X_OK)
      if (statSync(candidate).isFile()) return candidate
    } catch {}
  }
  return undefined
}

/** Finds the nats-server binary on PATH or in /usr/sbin or /usr/local/bin, or undefined. */
export function findNatsServer(): string | undefined {
  for (const candidate of ['nats-server', '/usr/sbin/nats-server', '/usr/local/bin/nats-server']) {
    try {
      execFileSync(candidate, ['--version'], { stdio: 'ignore' })
      return candidate
    } catch {}
  }
  return undefined
}

/**
 * Starts nats-server bound to 127.0.0.1 and resolves once it logs "Server is ready". A port it
 * picked itself that another process takes before the server binds it (the gap between
 * `freePort` and the bind) is picked again, up to `NATS_BIND_ATTEMPTS` starts.
 * @throws NatsServerError when the binary is missing, exits early (a given port in use included,
 *   naming it), is not ready in time, or finds no free ports in `NATS_BIND_ATTEMPTS` starts.
 */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServer> {
  const binary = options.binary ?? findNatsServer()
  if (!binary) throw new NatsServerError('nats-server is not installed (apt-get install nats-server)')
  const pick = options.pickPort ?? freePort
  if (options.storeDir) mkdirSync(options.storeDir, { recursive: true })
  const readyTimeout = options.readyTimeoutMs ?? 10_000
  let child: ChildProcess | undefined
  let args: string[] = []
  /** Set by `stop` and `kill`: the next exit was asked for. */
  let asked = false
  const exitListeners: ((exit: NatsServerExit) => void)[] = []
  const storeListeners: ((line: string) => void)[] = []

  const launch = () =>
    new Promise<void>((resolve, reject) => {
      // The server gets SIGTERM when this process dies, even by SIGKILL (see parent-death.ts).
      // Its own process group: the terminal's Ctrl-C reaches `triad run` alone, which stops the
      // roles before the server (see parent-death.ts).
      // One server per store (`triad-server.lock`): an orphaned server still holding it is refused.
      const store = options.storeDir
      try {
        if (store) checkStoreFree(store)
      } catch (err) {
        reject(err)
        return
      }
      const line = dieWithParent(binary, args, 'SIGTERM')
      const c = spawn(line.command, line.args, { ...OWN_PROCESS_GROUP, stdio: ['ignore', 'ignore', 'pipe'] })
      child = c
      if (store && c.pid !== undefined)
        try {
          writeStoreLock(store, c.pid)
        } catch {
          // A store that cannot take the lock (a full disk) cannot take the server's files either:
          // the server says so itself.
        }
      asked = false
      let ready = false
      let log = ''
      const timer = setTimeout(() => {
        c.kill('SIGKILL')
        reject(new NatsServerError(`nats-server not ready within ${readyTimeout} ms:\n${log}`))
      }, readyTimeout)
      let storeError = false
      c.stderr!.on('data', (d: Buffer) => {
        const text = d.toString()
        if (log.length < 20_000) log += text
        if (!storeError && NATS_STORE_ERROR.test(text)) {
          storeError = true
          const line = text
            .split('\n')
            .find((l) => NATS_STORE_ERROR.test(l))!
            .trim()
          for (const l of storeListeners) l(line)
        }
        if (!ready && log.includes('Server is ready')) {
          ready = true
          clearTimeout(timer)
          resolve()
        }
      })
      c.on('exit', (code, signal) => {
        clearTimeout(timer)
        if (store && c.pid !== undefined) removeStoreLock(store, c.pid)
        reject(new NatsServerError(`nats-server exited with code ${code}:\n${log}`, code))
        if (ready && !asked && child === c) for (const l of exitListeners) l({ pid: c.pid!, code, signal })
      })
      c.on('error', (err) => {
        clearTimeout(timer)
        reject(new NatsServerError(`cannot start ${binary}: ${err.message}`, undefined, err))
      })
    })

  let port = 0
  let monitorPort: number | undefined
  for (let attempt = 1; ; attempt++) {
    port = options.port ?? (await pick())
    monitorPort = options.monitorPort === false ? undefined : (options.monitorPort ?? (await pick()))
    args = ['-a', '127.0.0.1', '-p', String(port)]
    if (monitorPort !== undefined) args.push('-m', String(monitorPort))
    if (options.storeDir) args.push('-js', '-sd', options.storeDir)
    try {
      await launch()
      break
    } catch (err) {
      const taken = err instanceof NatsServerError ? portInUse(err.message) : undefined
      if (!(err instanceof NatsServerError) || taken === undefined) throw err
      if (taken === options.port || taken === options.monitorPort)
        throw new NatsServerError(
          `nats-server cannot listen on port ${taken}: it is in use by another process`,
          err.exitCode,
          err,
        )
      if (attempt >= NATS_BIND_ATTEMPTS)
        throw new NatsServerError(
          `nats-server found a port it picked taken before it could bind it, ${attempt} times in a row (last: ${taken}):\n${err.message}`,
          err.exitCode,
          err,
        )
    }
  }

  const terminate = async (signal: NodeJS.Signals) => {
    const c = child
    asked = true
    if (!c || c.exitCode !== null || c.signalCode !== null) return
    const exited = new Promise<void>((r) => c.once('exit', () => r()))
    c.kill(signal)
    const force = setTimeout(() => c.kill('SIGKILL'), NATS_STOP_GRACE_MS)
    await exited
    clearTimeout(force)
  }

  return {
    url: `nats://127.0.0.1:${port}`,
    monitorUrl: monitorPort === undefined ? undefined : `http://127.0.0.1:${monitorPort}`,
    port,
    pid: () => child?.pid,
    kill: () => terminate('SIGKILL'),
    restart: launch,
    stop: () => terminate('SIGTERM'),
    onExit: (listener) => {
      exitListeners.push(listener)
    },
    onStoreError: (listener) => {
      storeListeners.push(listener)
    },
  }
}
