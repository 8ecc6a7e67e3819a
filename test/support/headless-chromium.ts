import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/** Where CI installs Chromium (`.ci/services.sh`); `TRIAD_CHROMIUM` overrides it. */
export const CHROMIUM = process.env.TRIAD_CHROMIUM ?? '/usr/bin/chromium'

/** Why headless tests must be skipped here, or undefined when Chromium is available. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} not found (CI installs it with .ci/services.sh)`
}

/**
 * Loads an HTML file in headless Chromium with networking off and returns the DOM after its
 * scripts ran (`--dump-dom`, with a virtual-time budget so timers and animation frames fire).
 * @param windowSize the window's `[width, height]`, px (default: Chromium's, 800 x 600).
 */
export function dumpDom(
  htmlFile: string,
  timeoutMs = 60_000,
  windowSize?: [number, number],
): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), 'triad-chromium-'))
  const args = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    `--user-data-dir=${profile}`,
    '--virtual-time-budget=5000',
    ...(windowSize ? [`--window-size=${windowSize[0]},${windowSize[1]}`] : []),
    '--dump-dom',
    pathToFileURL(htmlFile).href,
  ]
  return new Promise((resolve, reject) => {
    execFile(CHROMIUM, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      rmSync(profile, { recursive: true, force: true })
      if (err) reject(new Error(`chromium failed: ${err.message}\n${stderr.slice(-2000)}`))
      else resolve(stdout)
    })
  })
}
