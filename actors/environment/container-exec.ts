import { PassThrough } from 'node:stream'
import type Docker from 'dockerode'
import type { Millis } from '../../protocols/index.ts'
import type { ContainerHandle } from './task.ts'

/**
 * The worker's side of session containers: a `ContainerHandle` (run a command with `docker exec`)
 * for a container the controller made.
 */

const MAX_OUT = 64 * 1024

/** Makes handles for containers by id. */
export class ContainerExec {
  constructor(private readonly docker: Docker) {}

  /** A handle on an existing container. */
  handle(c: { id: string; name: string }): ContainerHandle {
    const container = this.docker.getContainer(c.id)
    const docker = this.docker
    return {
      id: c.id,
      name: c.name,
      async exec(cmd, options = {}) {
        const timeoutMs: Millis = options.timeoutMs ?? 10_000
        const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, Tty: false })
        const stream = await exec.start({ hijack: true, stdin: false })
        const out: Buffer[] = []
        const err: Buffer[] = []
        let sizes = [0, 0]
        const stdout = new PassThrough()
        const stderr = new PassThrough()
        stdout.on('data', (b: Buffer) => {
          if (sizes[0]! < MAX_OUT) out.push(b)
          sizes = [sizes[0]! + b.length, sizes[1]!]
        })
        stderr.on('data', (b: Buffer) => {
          if (sizes[1]! < MAX_OUT) err.push(b)
          sizes = [sizes[0]!, sizes[1]! + b.length]
        })
        docker.modem.demuxStream(stream, stdout, stderr)
        const timedOut = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => {
            stream.destroy()
            resolve(true)
          }, timeoutMs)
          const done = () => {
            clearTimeout(timer)
            resolve(false)
          }
          stream.on('end', done)
          stream.on('close', done)
          stream.on('error', done)
        })
        const text = (bs: Buffer[]) => Buffer.concat(bs).toString('utf8').slice(0, MAX_OUT)
        if (timedOut)
          return { exitCode: 124, stdout: text(out), stderr: `${text(err)}timed out after ${timeoutMs} ms` }
        const info = await exec.inspect()
        return { exitCode: info.ExitCode ?? -1, stdout: text(out), stderr: text(err) }
      },
    }
  }
}
