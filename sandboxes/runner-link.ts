import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SandboxLostError } from './errors.ts'

/** Prefix of a link's host folder in the temporary folder; the owner's pid follows. */
const PREFIX = 'triad-sandbox-link-'

/**
 * The host's end of a warm container's runner socket: a unix stream socket in a host folder of its
 * own, which the container bind-mounts read-only; the runner (`runner.py serve --connect`) connects
 * to it when it starts. Jobs and results then go straight between this process and the runner,
 * not through the docker daemon's attach stream (which costs the daemon about 0.3 ms of CPU a job
 * and two more process hops each way). The first connection is the runner's: the listener is then
 * closed and the socket file removed, so no job (they run only after that) can connect. The folder
 * is 0700 when this process is root (the container's root owns it; the job's uid cannot enter),
 * else 0711 with a socket anyone may connect to until the runner has.
 */
export class RunnerLink {
  /** The socket's name in the folder. */
  static readonly SOCKET = 'runner.sock'
  /** The host folder to bind-mount. */
  readonly dir: string
  private readonly server: Server
  private readonly first: Promise<Socket>
  private closed = false

  private constructor(dir: string, server: Server, first: Promise<Socket>) {
    this.dir = dir
    this.server = server
    this.first = first
  }

  /**
   * Makes the folder and listens on its socket.
   * @throws the listen error (a folder this process cannot make, a path too long for a socket).
   */
  static async listen(): Promise<RunnerLink> {
    const dir = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-`))
    const root = process.getuid?.() === 0
    if (!root) chmodSync(dir, 0o711)
    const server = createServer()
    const first = new Promise<Socket>((resolve) => {
      server.on('connection', (conn) => {
        resolve(conn)
        server.close()
        rmSync(join(dir, RunnerLink.SOCKET), { force: true })
      })
    })
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(join(dir, RunnerLink.SOCKET), () => resolve())
      })
      if (!root) chmodSync(join(dir, RunnerLink.SOCKET), 0o777)
    } catch (err) {
      server.close()
      rmSync(dir, { recursive: true, force: true })
      throw err
    }
    return new RunnerLink(dir, server, first)
  }

  /**
   * The runner's connection.
   * @param exited resolves when the container's runner has exited (then it never connects).
   * @throws SandboxLostError when the runner exits first or does not connect within `ms`.
   */
  async accept(exited: Promise<void>, ms: number): Promise<Socket> {
    let timer: NodeJS.Timeout | undefined
    const lost = exited.then(() => {
      throw new SandboxLostError('the container exited before its runner connected')
    })
    lost.catch(() => {}) // it rejects later too, when the container ends after connecting
    try {
      return await Promise.race([
        this.first,
        lost,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new SandboxLostError(`the container's runner did not connect within ${ms} ms`)),
            ms,
          )
        }),
      ])
    } finally {
      clearTimeout(timer)
    }
  }

  /** Stops listening and removes the folder (the runner's connection, once made, is its own). */
  close(): void {
    if (this.closed) return
    this.closed = true
    this.server.close()
    rmSync(this.dir, { recursive: true, force: true })
  }

  /** Removes the folders of links whose owner process is gone (a server that was killed). */
  static sweep(): void {
    let names: string[]
    try {
      names = readdirSync(tmpdir())
    } catch {
      return
    }
    for (const n of names) {
      if (!n.startsWith(PREFIX)) continue
      const pid = Number(n.slice(PREFIX.length).split('-')[0])
      if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) continue
      try {
        process.kill(pid, 0)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ESRCH')
          rmSync(join(tmpdir(), n), { recursive: true, force: true })
      }
    }
  }
}
