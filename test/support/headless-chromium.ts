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

/** Chromium's flags for a headless page load with networking off and a throw-away profile. */
function headlessArgs(profile: string, windowSize?: [number, number]): string[] {
  return [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--hide-scrollbars',
    `--user-data-dir=${profile}`,
    '--virtual-time-budget=5000',
    ...(windowSize ? [`--window-size=${windowSize[0]},${windowSize[1]}`] : []),
  ]
}

/** Runs Chromium with `args` and a fresh profile; resolves with its stdout. */
function chromium(args: (profile: string) => string[], timeoutMs: number): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), 'triad-chromium-'))
  return new Promise((resolve, reject) => {
    execFile(
      CHROMIUM,
      args(profile),
      { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        rmSync(profile, { recursive: true, force: true })
        if (err) reject(new Error(`chromium failed: ${err.message}\n${stderr.slice(-2000)}`))
        else resolve(stdout)
      },
    )
  })
}

/**
 * Loads an HTML file in headless Chromium and writes a PNG of the window (`windowSize` px; a
 * tall window takes the whole page).
 * @param hash appended to the file's URL (`#smoothing=0.9`), for the page's script to read.
 */
export async function screenshot(
  htmlFile: string,
  pngFile: string,
  windowSize: [number, number],
  hash = '',
  timeoutMs = 60_000,
): Promise<void> {
  await chromium(
    (profile) => [
      ...headlessArgs(profile, windowSize),
      `--screenshot=${pngFile}`,
      pathToFileURL(htmlFile).href + hash,
    ],
    timeoutMs,
  )
}

/**
 * Loads an HTML file in headless Chromium with networking off and returns the DOM after its
 * scripts ran (`--dump-dom`, with a virtual-time budget so timers and animation frames fire).
 * @param windowSize the window's `[width, height]`, px (default: Chromium's, 800 x 600).
 * @param hash appended to the file's URL (`#smoothing=0.9`), for the page's script to read.
 */
export function dumpDom(
  htmlFile: string,
  timeoutMs = 60_000,
  windowSize?: [number, number],
  hash = '',
): Promise<string> {
  return chromium(
    (profile) => [...headlessArgs(profile, windowSize), '--dump-dom', pathToFileURL(htmlFile).href + hash],
    timeoutMs,
  )
}
