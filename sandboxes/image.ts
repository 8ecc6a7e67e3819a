import { spawn } from 'node:child_process'
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Docker from 'dockerode'
import { SANDBOX_LANGUAGES, type SandboxLanguage } from '../protocols/index.ts'
import { SandboxImageError } from './errors.ts'
import { hostEtcPaths } from './host-etc.ts'
import { LANGUAGES, missingToolchain } from './languages.ts'

/** The default image name. */
export const DEFAULT_IMAGE = 'triad-sandbox:latest'
/** First uid (and gid) of the users the code runs as inside a container: each container takes one of
 *  `SANDBOX_UID_COUNT` uids from here, unused by any other container on the host, so per-user kernel
 *  limits (inotify instances, POSIX message-queue bytes, RLIMIT_NPROC) are its job's alone. */
export const SANDBOX_UID = 10001
/** How many sandbox uids the image names (`sandbox`, `sandbox1`, ... in its /etc/passwd). */
export const SANDBOX_UID_COUNT = 1024
/** Image label: comma-separated read-only bind mounts (`host:container:ro`) the image needs. */
export const BINDS_LABEL = 'triad.sandbox.binds'
/** Image label: layout version; a backend refuses an image of another layout. */
export const LAYOUT_LABEL = 'triad.sandbox.layout'
/** Current layout version of the image. */
export const LAYOUT_VERSION = '4'

/** What `buildSandboxImage` made. */
export interface BuiltImage {
  image: string
  id: string
  /** Host folders bind-mounted read-only into every container (they bring the toolchains). */
  binds: string[]
  /** Languages whose toolchain is not on this host (see `missingToolchain`): they fail to run. */
  missing: { language: SandboxLanguage; paths: string[]; packages: readonly string[] }[]
}

/**
 * Builds the sandbox image locally, without a registry: a tiny root filesystem (mount points,
 * `/etc/passwd` with the `sandbox` user, symlinks mirroring the host's merged /usr) imported with
 * `docker import`; the passwd and group files name the `SANDBOX_UID_COUNT` sandbox users (home /tmp).
 * The interpreters and compilers come from the host's /usr (and /lib, /lib64 when
 * they are not symlinks) and the /etc entries they need (`hostEtcPaths`: alternatives, the loader
 * cache, the JDK's configuration), bind-mounted read-only into each container; the binds are
 * recorded in a label. The toolchains are Debian's packages on the host (`.ci/services.sh`
 * installs them); languages whose toolchain is missing are reported in `missing`.
 * @throws SandboxImageError when docker is not reachable or the import fails.
 */
export async function buildSandboxImage(o: { image?: string; docker?: Docker } = {}): Promise<BuiltImage> {
  const image = o.image ?? DEFAULT_IMAGE
  const docker = o.docker ?? new Docker()
  const root = mkdtempSync(join(tmpdir(), 'triad-sandbox-rootfs-'))
  try {
    const binds: string[] = ['/usr:/usr:ro']
    for (const d of ['usr', 'etc', 'work', 'tmp', 'proc', 'dev', 'sys', 'sbin', 'root'])
      mkdirSync(join(root, d))
    // docker copies the mode of the image's directory onto a tmpfs mounted there (`mode=` is ignored)
    for (const d of ['work', 'tmp']) chmodSync(join(root, d), 0o1777)
    for (const top of ['bin', 'lib', 'lib64', 'lib32', 'libx32']) {
      let st: ReturnType<typeof lstatSync> | undefined
      try {
        st = lstatSync(`/${top}`)
      } catch {
        continue
      }
      if (st.isSymbolicLink()) symlinkSync(readlinkSync(`/${top}`), join(root, top))
      else if (st.isDirectory()) {
        mkdirSync(join(root, top))
        binds.push(`/${top}:/${top}:ro`)
      }
    }
    for (const p of hostEtcPaths()) {
      // the mount point: a folder for a folder, an empty file for a file
      if (statSync(p).isDirectory()) mkdirSync(join(root, p))
      else writeFileSync(join(root, p), '')
      binds.push(`${p}:${p}:ro`)
    }
    const users = Array.from({ length: SANDBOX_UID_COUNT }, (_, i) => ({
      name: i === 0 ? 'sandbox' : `sandbox${i}`,
      id: SANDBOX_UID + i,
    }))
    writeFileSync(
      join(root, 'etc/passwd'),
      `root:x:0:0:root:/root:/bin/sh\n${users.map((u) => `${u.name}:x:${u.id}:${u.id}:sandbox:/tmp:/bin/sh\n`).join('')}nobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n`,
    )
    writeFileSync(
      join(root, 'etc/group'),
      `root:x:0:\n${users.map((u) => `${u.name}:x:${u.id}:\n`).join('')}nogroup:x:65534:\n`,
    )
    writeFileSync(join(root, 'etc/hosts'), '127.0.0.1 localhost\n')
    writeFileSync(join(root, 'etc/nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files\n')
    const tar = spawn('tar', ['-C', root, '--numeric-owner', '--owner=0', '--group=0', '-c', '.'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const [repo, tag] = image.includes(':') ? image.split(/:(?=[^:]+$)/) : [image, 'latest']
    let stream: NodeJS.ReadableStream
    try {
      stream = await docker.importImage(tar.stdout, {
        repo,
        tag,
        changes: [
          `LABEL ${BINDS_LABEL}=${binds.join(',')}`,
          `LABEL ${LAYOUT_LABEL}=${LAYOUT_VERSION}`,
          `USER ${SANDBOX_UID}:${SANDBOX_UID}`,
          'WORKDIR /work',
          'CMD ["/usr/bin/sleep", "infinity"]',
        ],
      } as Record<string, unknown>)
    } catch (cause) {
      throw new SandboxImageError(image, `docker import failed: ${(cause as Error).message}`, { cause })
    }
    const events = await new Promise<{ status?: string; error?: string }[]>((resolve, reject) =>
      docker.modem.followProgress(stream, (err: Error | null, out: { status?: string; error?: string }[]) =>
        err ? reject(err) : resolve(out),
      ),
    )
    const failed = events.find((e) => e.error)
    if (failed) throw new SandboxImageError(image, `docker import failed: ${failed.error}`)
    const info = await docker.getImage(image).inspect()
    const missing = SANDBOX_LANGUAGES.map((language) => ({
      language,
      paths: missingToolchain(language),
      packages: LANGUAGES[language].packages,
    })).filter((m) => m.paths.length > 0)
    return { image, id: info.Id, binds, missing }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}
