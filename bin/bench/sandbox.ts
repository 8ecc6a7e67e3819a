/**
 * `triad bench sandbox`: requests/s and p50/p99 latency of `print(1)` through the HTTP service at
 * 1, 16 and 128 concurrent callers, for the local and docker backends, each on the fork path (the
 * slot's python fork server: `local`, `docker`) and the spawn path (a new interpreter per request:
 * `local-spawn`, `docker-spawn`, and `docker-exec`, one `docker exec` per request), against a
 * baseline in the same run (spawning `python3 -c 'print(1)'` directly on the host at the same
 * concurrency, no sandbox, no HTTP). `--soak S` adds a run of 128 callers for S seconds per backend,
 * counting failed requests (any transport error, non-200, or status other than Success).
 * `floors` says for the docker fork path whether it met: at 16 callers at least 3x the baseline's
 * throughput with p50 <= 30 ms; 1 caller p50 <= 5 ms; 0 failures in the soak.
 * The load generator is node:http with keep-alive connections, in this process.
 * Env: TRIAD_BENCH_SANDBOX_BACKENDS (comma list of the kinds above), TRIAD_BENCH_SANDBOX_IMAGE.
 */
import { execFile } from 'node:child_process'
import { Agent, request } from 'node:http'
import { loadavg } from 'node:os'
import { promisify } from 'node:util'
import {
  BackendKind,
  buildSandboxServer,
  DEFAULT_LIMITS,
  DockerBackend,
  DockerMode,
  LocalBackend,
  type SandboxBackend,
  type SandboxLimits,
} from '../../sandboxes/index.ts'

const exec = promisify(execFile)

interface Load {
  callers: number
  seconds: number
  requests: number
  failed: number
  perSecond: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  /** First failure, to say why. */
  firstFailure?: string
}

const pct = (sorted: number[], p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

/** Runs `callers` loops of `call` for `seconds`; each loop starts its next call when one ends. */
async function load(
  callers: number,
  seconds: number,
  call: () => Promise<string | undefined>,
): Promise<Load> {
  const lat: number[] = []
  let failed = 0
  let firstFailure: string | undefined
  const t0 = performance.now()
  const end = t0 + seconds * 1000
  const lane = async () => {
    while (performance.now() < end) {
      const s = performance.now()
      let why: string | undefined
      try {
        why = await call()
      } catch (err) {
        why = (err as Error).message
      }
      lat.push(performance.now() - s)
      if (why !== undefined) {
        failed++
        firstFailure ??= why
      }
    }
  }
  await Promise.all(Array.from({ length: callers }, lane))
  const took = (performance.now() - t0) / 1000
  lat.sort((a, b) => a - b)
  const r: Load = {
    callers,
    seconds: Number(took.toFixed(2)),
    requests: lat.length,
    failed,
    perSecond: Number((lat.length / took).toFixed(1)),
    p50Ms: Math.round(pct(lat, 50)),
    p99Ms: Math.round(pct(lat, 99)),
    maxMs: Math.round(lat[lat.length - 1] ?? 0),
  }
  if (firstFailure) r.firstFailure = firstFailure
  return r
}

const BODY = JSON.stringify({ code: 'print(1)', language: 'python' })

/** Keep-alive connections of the load generator (one per caller at most). */
const agent = new Agent({ keepAlive: true, maxSockets: 1024 })

/** One POST of BODY with node:http (in this process, fetch cost about 0.7 ms of CPU a request more,
 *  taken from the server it measures). @returns the status code and the body's text. */
function postBody(url: URL): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: '/run_code',
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY) },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        )
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(BODY)
  })
}

async function httpCall(url: URL): Promise<string | undefined> {
  const { status, text } = await postBody(url)
  if (status !== 200) return `HTTP ${status}: ${text.slice(0, 200)}`
  const body = JSON.parse(text) as { status: string; run_result?: { stdout?: string } }
  if (body.status !== 'Success' || body.run_result?.stdout !== '1\n')
    return `status ${body.status}: ${text.slice(0, 300)}`
  return undefined
}

async function baselineCall(): Promise<string | undefined> {
  const { stdout } = await exec('/usr/bin/python3', ['-c', 'print(1)'])
  return stdout === '1\n' ? undefined : `stdout ${stdout}`
}

export async function run(options: { quick?: boolean; soak?: string; backends?: string }) {
  const seconds = options.quick ? 2 : 8
  const soak = options.soak ? Number(options.soak) : 0
  const callers = options.quick ? [1, 16] : [1, 16, 128]
  const kinds = (
    process.env['TRIAD_BENCH_SANDBOX_BACKENDS'] ?? 'local,local-spawn,docker,docker-spawn,docker-exec'
  ).split(',')
  const image = process.env['TRIAD_BENCH_SANDBOX_IMAGE']
  const limits: SandboxLimits = { ...DEFAULT_LIMITS }
  const result: Record<string, unknown> = {
    config: { code: 'print(1)', language: 'python', seconds, concurrency: limits.concurrency, soak },
    loadAverageAtStart: loadavg().map((x) => Number(x.toFixed(2))),
  }
  const baseline: Load[] = []
  for (const c of callers) baseline.push(await load(c, seconds, baselineCall))
  result['baseline (python3 spawned on the host, no sandbox)'] = baseline
  for (const kind of kinds) {
    let backend: SandboxBackend
    if (kind === BackendKind.Docker) backend = new DockerBackend({ limits, image, mode: DockerMode.Attach })
    else if (kind === 'docker-spawn')
      backend = new DockerBackend({ limits, image, mode: DockerMode.Attach, forkServer: false })
    else if (kind === 'docker-exec') backend = new DockerBackend({ limits, image, mode: DockerMode.Exec })
    else if (kind === 'local-spawn') backend = new LocalBackend({ limits, forkServer: false })
    else if (kind === BackendKind.Local) backend = new LocalBackend({ limits })
    else {
      result[kind] = { skipped: `unknown kind '${kind}'` }
      continue
    }
    try {
      await backend.start()
    } catch (err) {
      result[kind] = { skipped: (err as Error).message }
      continue
    }
    const app = buildSandboxServer({ backend })
    const url = new URL(await app.listen({ port: 0, host: '127.0.0.1' }))
    try {
      await httpCall(url) // warm-up
      const rows: (Load & { vsBaselineThroughput: number })[] = []
      for (const [i, c] of callers.entries()) {
        const r = await load(c, seconds, () => httpCall(url))
        rows.push({ ...r, vsBaselineThroughput: Number((r.perSecond / baseline[i]!.perSecond).toFixed(3)) })
      }
      const entry: Record<string, unknown> = {
        isolation: backend.isolation,
        path: kind === BackendKind.Docker || kind === BackendKind.Local ? 'fork' : 'spawn',
        runs: rows,
      }
      if (soak > 0) entry['soak'] = await load(128, soak, () => httpCall(url))
      entry['stats'] = backend.stats()
      result[kind] = entry
      if (kind === BackendKind.Docker) {
        const one = rows.find((r) => r.callers === 1)
        const sixteen = rows.find((r) => r.callers === 16)
        const soaked = entry['soak'] as Load | undefined
        result['floors (docker fork path)'] = {
          '16 callers >= 3x baseline throughput': sixteen ? sixteen.vsBaselineThroughput >= 3 : null,
          '16 callers p50 <= 30 ms': sixteen ? sixteen.p50Ms <= 30 : null,
          '1 caller p50 <= 5 ms': one ? one.p50Ms <= 5 : null,
          '0 failures at 128 callers in the soak': soaked ? soaked.failed === 0 : null,
        }
      }
    } finally {
      await app.close()
      await backend.close()
    }
  }
  result['loadAverageAtEnd'] = loadavg().map((x) => Number(x.toFixed(2)))
  return result
}
