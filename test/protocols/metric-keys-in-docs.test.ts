import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { metricKeyInfo } from '../../protocols/index.ts'
import { METRIC_CATALOG } from '../../protocols/testing.ts'
import { REPO_ROOT, sourceFiles } from '../support/source-files.ts'

const root = REPO_ROOT
const sources = sourceFiles

/** The metric areas (first segments) and placeholders (`<task>`, ...) of the catalog. */
const AREAS = new Set(METRIC_CATALOG.map((e) => e.key.split('/')[0]!))
const PLACEHOLDERS = new Set(METRIC_CATALOG.flatMap((e) => e.key.match(/<[a-z]+>/g) ?? []))

/** Every `.md` file under `dir` (relative to the repository's root), recursively, as absolute paths. */
function markdownFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.md'))
    .map((e) => join(e.parentPath, e.name))
}

/**
 * Whether the documented key `doc` names a catalog key (which the catalog's own test ties to the
 * code that reports it): `*` stands for any run of characters within a segment, a placeholder
 * (`<task>`) stands for itself or for a value (`calc`).
 */
function inCatalog(doc: string): boolean {
  if (!doc.includes('*')) return metricKeyInfo(doc) !== undefined || METRIC_CATALOG.some((e) => e.key === doc)
  const re = new RegExp(`^${doc.replace(/[.+?^$()[\]\\|{}]/g, '\\$&').replace(/\*/g, '[^/]*')}$`)
  return METRIC_CATALOG.some((e) => re.test(e.key))
}

describe('protocols/metric keys in the docs', () => {
  it('metric keys - every metric key the README, docs/ and protocols/ name is in the metric-key catalog', () => {
    const docs = [join(root, 'README.md'), ...markdownFiles('docs'), ...sources('protocols')]
    const unknown: string[] = []
    let checked = 0
    for (const file of docs) {
      const text = readFileSync(file, 'utf8')
      for (const m of text.matchAll(/`([a-z_]+\/[A-Za-z0-9_@*<>/-]+)`/g)) {
        const doc = m[1]!
        // A path (`logs/learner.log`, `sft/`), or a name with a placeholder that is not a metric's
        // (`policy/<i>`, a supervised child): not a metric key.
        if (!AREAS.has(doc.split('/')[0]!) || doc.endsWith('/')) continue
        if ((doc.match(/<[a-z_]+>/g) ?? []).some((p) => !PLACEHOLDERS.has(p))) continue
        checked++
        if (!inCatalog(doc)) unknown.push(`${relative(root, file)}: ${doc}`)
      }
    }
    assert.ok(checked >= 10, `only ${checked} metric keys found in the docs: the scan is broken`)
    assert.deepEqual(unknown, [])
  })
})
