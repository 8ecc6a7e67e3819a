import { delimiter, dirname } from 'node:path'
import { findNatsServer, natsServerOnPath } from '../../actors/index.ts'

/** PATH without any folder that holds a `nats-server` (node is started by its full path, so it stays runnable). */
export function pathWithoutNatsServer(path: string = process.env.PATH ?? ''): string {
  return path
    .split(delimiter)
    .filter((dir) => dir && !natsServerOnPath(dir))
    .join(delimiter)
}

/**
 * PATH with the folder of the installed nats-server first, so `triad run` finds it whatever the
 * test runner's PATH is (Debian installs it in /usr/sbin, which a normal user's PATH lacks).
 * @throws Error when no nats-server is installed.
 */
export function pathWithNatsServer(path: string = process.env.PATH ?? ''): string {
  const binary = findNatsServer()
  if (!binary) throw new Error('nats-server is not installed')
  const dir = binary.includes('/') ? dirname(binary) : undefined
  return dir ? [dir, path].join(delimiter) : path
}
