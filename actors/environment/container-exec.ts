import { PassThrough } from 'node:stream'
import type Docker from 'dockerode'
import type { Millis } from '../../protocols/index.ts'
import type { ContainerHandle } from './task.ts'

/**
 * The worker's side of session containers: a `ContainerHandle` (run a command with `docker exec`)
 * for a container the controller made.
 */

const MAX_OUT = 64 * 1024

/**
 * Runs `cmd` in a container with `docker exec` and collects its output (cut at 64 KiB each).
 * Exit code 124 when it runs past `timeoutMs` (the command itself is left to the container's end).
 */
export async function execIn(
  docker: Docker,
  container: Docker.Container,
  cmd: string[],
  timeoutMs: Millis,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, Tty: false })
  const stream = await exec.start({ hijack: true, stdin: false })
  const out: Buffer[] = []
  const err: Buffer[] = []
  const sizes = [0, 0]
  const collect = (into: Buffer[], k: number) => (b: Buffer) => {
    if (sizes[k]! < MAX_OUT) into.push(b)
    sizes[k] = sizes[k]! + b.length
  }
  const stdout = new PassThrough().on('data', collect(out, 0))
  const stderr = new PassThrough().on('data', collect(err, 1))
  docker.modem.demuxStream(stream, stdout, stderr)
  const timedOut = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(true), timeoutMs)
    const done = () => {
      clearTimeout(timer)
      resolve(false)
    }
    stream.on('end', done)
    stream.on('close', done)
    stream.on('error', done)
  })
  // The hijacked socket stays open otherwise and keeps the process alive.
  stream.destroy()
  const text = (bs: Buffer[]) => Buffer.concat(bs).toString('utf8').slice(0, MAX_OUT)
  if (timedOut)
    return { exitCode: 124, stdout: text(out), stderr: `${text(err)}timed out after ${timeoutMs} ms` }
  const info = await exec.inspect()
  return { exitCode: info.ExitCode ?? -1, stdout: text(out), stderr: text(err) }
}

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
      exec: (cmd, options = {}) => execIn(docker, container, cmd, options.timeoutMs ?? 10_000),
    }
  }
}
