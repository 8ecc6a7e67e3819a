import { spawn } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Docker from 'dockerode'

/**
 * A tiny image for env containers, built locally without a registry: `/bin/busybox` from Debian's
 * busybox-static with its applets linked, imported with `docker import`.
 */

/** Applets linked into the image. */
const APPLETS = ['sh', 'sleep', 'true', 'false', 'echo', 'cat', 'ls', 'wc', 'head', 'env', 'mkdir', 'rm']

/**
 * Builds `image` from a static busybox unless it exists already.
 * @throws Error when busybox is missing or docker refuses the import.
 */
export async function ensureBusyboxImage(
  docker: Docker,
  image: string,
  busybox = '/bin/busybox',
): Promise<void> {
  try {
    await docker.getImage(image).inspect()
    return
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode !== 404) throw e
  }
  const root = mkdtempSync(join(tmpdir(), 'triad-env-rootfs-'))
  try {
    for (const d of ['bin', 'tmp', 'proc', 'dev', 'sys', 'etc']) mkdirSync(join(root, d))
    copyFileSync(busybox, join(root, 'bin/busybox'))
    for (const a of APPLETS) symlinkSync('busybox', join(root, 'bin', a))
    const tar = spawn('tar', ['-C', root, '--numeric-owner', '--owner=0', '--group=0', '-c', '.'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const [repo, tag] = image.includes(':') ? image.split(/:(?=[^:]+$)/) : [image, 'latest']
    const stream = await docker.importImage(tar.stdout, { repo, tag })
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve())),
    )
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}
