import { mkdir, writeFile } from 'node:fs/promises'
import { Session } from 'node:inspector/promises'
import { join } from 'node:path'

/** A CPU profile being recorded in this process. */
export interface CpuProfile {
  /** Stops recording and writes the profile; resolves with its path. */
  stop(): Promise<string>
}

/**
 * Records a V8 CPU profile of this process through the inspector (what `node --cpu-prof` does,
 * which `NODE_OPTIONS` does not allow), to `<dir>/<name>.cpuprofile`: open it in Chrome DevTools
 * (Performance) or read its self times. `triad worker` starts one when `TRIAD_CPU_PROFILE` names a
 * folder, so `TRIAD_CPU_PROFILE=/tmp/prof triad run recipe.ts` profiles the learner and the rollout.
 * @param intervalUs sampling interval, microseconds (default 1,000).
 */
export async function startCpuProfile(dir: string, name: string, intervalUs = 1_000): Promise<CpuProfile> {
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: intervalUs })
  await session.post('Profiler.start')
  return {
    stop: async () => {
      const { profile } = await session.post('Profiler.stop')
      session.disconnect()
      await mkdir(dir, { recursive: true })
      const file = join(dir, `${name}.cpuprofile`)
      await writeFile(file, JSON.stringify(profile))
      return file
    },
  }
}
