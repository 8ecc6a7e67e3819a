import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { tasks } from '../../actors/index.ts'

const root = fileURLToPath(new URL('../../', import.meta.url))

/** Every `.ts` file under `dir`, recursively. */
function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name))
}

/**
 * The metric keys the code can report, as written in its source: every quoted or template string
 * that looks like `area/name[/...]`, from the folders that publish metrics. A template's `${...}`
 * stands for one segment.
 */
function reportedKeyPatterns(): { key: string; parts: string[] }[] {
  const out = new Map<string, string[]>()
  for (const file of ['actors', 'gpu', 'recipes', 'bin'].flatMap(sources)) {
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/(['`])([a-z_]+\/(?:[A-Za-z0-9_@-]|\$\{[^}]*\}|\/)+)\1/g)) {
      const key = m[2]!
      out.set(key, key.split('/'))
    }
  }
  return [...out].map(([key, parts]) => ({ key, parts }))
}

/**
 * Whether the documented key `doc` names a reported key: segment by segment, a literal segment
 * equals the source's; `*` in the doc stands for any run of characters within a segment; a source
 * `${...}` segment takes a task name (`rollout/success/calc`) or a doc placeholder (`<task>`).
 */
function names(doc: string, source: string[]): boolean {
  const parts = doc.split('/')
  if (parts.length !== source.length) return false
  return parts.every((p, i) => {
    const s = source[i]!
    if (/^\$\{[^}]*\}$/.test(s)) return Object.hasOwn(tasks, p) || /^<[a-z_]+>$/.test(p)
    if (s.includes('${')) return false
    if (p.includes('*'))
      return new RegExp(`^${p.replace(/[.+?^$()[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`).test(s)
    return p === s
  })
}

describe('protocols/metric keys in the docs', () => {
  it('metric keys - every metric key the README and protocols/ name is one the code reports', () => {
    const reported = reportedKeyPatterns()
    const areas = new Set(reported.map((r) => r.parts[0]!))
    const docs = [join(root, 'README.md'), ...sources('protocols')]
    const unknown: string[] = []
    let checked = 0
    for (const file of docs) {
      const text = readFileSync(file, 'utf8')
      for (const m of text.matchAll(/`([a-z_]+\/[A-Za-z0-9_@*<>/-]+)`/g)) {
        const doc = m[1]!
        if (!areas.has(doc.split('/')[0]!)) continue // a path (`logs/learner.log`), not a metric
        checked++
        if (!reported.some((r) => names(doc, r.parts))) unknown.push(`${relative(root, file)}: ${doc}`)
      }
    }
    assert.ok(checked >= 5, `only ${checked} metric keys found in the docs: the scan is broken`)
    assert.deepEqual(unknown, [])
  })
})
