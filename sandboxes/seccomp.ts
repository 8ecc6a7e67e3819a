import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** The script that compiles the local sandbox's seccomp filter (libseccomp's python bindings). */
const FILTER_SCRIPT = fileURLToPath(new URL('./seccomp-filter.py', import.meta.url))

/**
 * Compiles the local sandbox's seccomp filter (`seccomp-filter.py`: what docker's default profile
 * refuses, refused with EPERM) into a BPF program for `bwrap --seccomp FD`, with Debian's
 * `/usr/bin/python3` and its `python3-seccomp` package.
 * @returns the program's bytes (a whole number of 8-byte BPF instructions), or `{error}` saying
 *          why it could not be built (one line).
 */
export function buildSeccompFilter(python = '/usr/bin/python3'): { bpf: Buffer } | { error: string } {
  const r = spawnSync(python, ['-I', FILTER_SCRIPT], { env: {}, maxBuffer: 1 << 20 })
  if (r.error) return { error: `cannot run ${python}: ${r.error.message}` }
  if (r.status !== 0) {
    const why = r.stderr.toString('utf8').trim().split('\n').pop() ?? ''
    return {
      error: /No module named 'seccomp'/.test(why)
        ? `${python} has no seccomp module (apt-get install python3-seccomp)`
        : `${FILTER_SCRIPT} failed: ${why}`,
    }
  }
  if (r.stdout.length === 0 || r.stdout.length % 8 !== 0)
    return { error: `${FILTER_SCRIPT} wrote ${r.stdout.length} bytes, not a BPF program` }
  return { bpf: r.stdout }
}
