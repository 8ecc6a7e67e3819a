import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { describe, it } from 'node:test'
import { MetricKind, MetricPanel, metricKeyInfo } from '../../protocols/index.ts'
import { METRIC_CATALOG } from '../../protocols/testing.ts'
import { REPO_ROOT, sourceFiles } from '../support/source-files.ts'

const root = REPO_ROOT
const sources = sourceFiles

/** Areas of metric keys: the first segment of every catalog key. */
const AREAS = new Set(METRIC_CATALOG.map((e) => e.key.split('/')[0]!))

/**
 * Key literals of the reporters (actors/, gpu/): quoted or template strings `area/name[/...]` whose
 * area is a metric area, with each `${...}` as a sample segment. Templates that only build a
 * prefix (`learner/${k}`, `reward_model/${k}`: other catalog keys with a prefix) are left out.
 */
function reportedKeys(): { file: string; key: string }[] {
  const out: { file: string; key: string }[] = []
  for (const file of ['actors', 'gpu'].flatMap(sources)) {
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/(['`])([a-z_]+\/(?:[A-Za-z0-9_@-]|\$\{[^}]*\}|\/)+)\1/g)) {
      const literal = m[2]!
      if (!AREAS.has(literal.split('/')[0]!) || literal.endsWith('/')) continue
      if (/^(learner|reward_model)\/\$\{k\}$/.test(literal)) continue
      out.push({ file: relative(root, file), key: literal.replace(/\$\{[^}]*\}/g, 'x1') })
    }
  }
  return out
}

describe('protocols/metric-catalog', () => {
  it('metric catalog - every key literal of the reporters (actors/, gpu/) is in the catalog', () => {
    const keys = reportedKeys()
    assert.ok(keys.length >= 100, `only ${keys.length} keys found: the scan is broken`)
    // step_good/<j> is a task's per-turn label inside a trajectory's metrics, not a reported key.
    const missing = keys.filter((k) => !k.key.startsWith('step_good/') && !metricKeyInfo(k.key))
    assert.deepEqual(missing, [])
  })

  it('metric catalog - every catalog key is one the reporters name (no stale entry)', () => {
    const literals = reportedKeys().map((k) => k.key)
    const stale = METRIC_CATALOG.filter((e) => {
      // A placeholder segment (or suffix: level_<level>) matches a template's `${...}` segment.
      const re = new RegExp(`^${e.key.replace(/<[a-z]+>/g, 'x1')}$`)
      return !literals.some((l) => re.test(l))
    }).map((e) => e.key)
    // Keys built from a prefix and other names: reward_model/policy/* and
    // reward_model/verdict_entropy (gpu/reward-model-step.ts prefixes its step's metrics),
    // env/adapter/<counter> (the adapter's counts by name).
    const prefixed = (k: string) =>
      k.startsWith('reward_model/policy/') ||
      k === 'reward_model/verdict_entropy' ||
      k === 'env/adapter/<counter>'
    assert.deepEqual(
      stale.filter((k) => !prefixed(k)),
      [],
    )
  })

  it('metricKeyInfo - placeholders match one segment; an exact key wins over a pattern; unknown keys are undefined', () => {
    assert.equal(metricKeyInfo('rollout/success/calc')?.key, 'rollout/success/<task>')
    assert.equal(metricKeyInfo('env/difficulty/maze/level_3')?.key, 'env/difficulty/<task>/level_<level>')
    assert.equal(metricKeyInfo('env/difficulty/maze')?.key, 'env/difficulty/<task>')
    assert.equal(metricKeyInfo('env/adapter/enabled')?.kind, MetricKind.flag)
    assert.equal(metricKeyInfo('env/adapter/raised')?.kind, MetricKind.counter)
    assert.equal(metricKeyInfo('process/learner/restarts')?.key, 'process/<name>/restarts')
    assert.equal(metricKeyInfo('rollout/success/calc/extra'), undefined)
    assert.equal(metricKeyInfo('rollout/success'), undefined)
    assert.equal(metricKeyInfo('my/custom_metric'), undefined)
  })

  it('metric catalog - keys are unique, each with a meaning, a unit, a kind and a panel', () => {
    const keys = METRIC_CATALOG.map((e) => e.key)
    assert.equal(new Set(keys).size, keys.length)
    const kinds = Object.values(MetricKind) as string[]
    const panels = Object.values(MetricPanel) as string[]
    for (const e of METRIC_CATALOG) {
      assert.ok(e.meaning.length > 5 && e.unit.length > 0, e.key)
      assert.ok(kinds.includes(e.kind) && panels.includes(e.panel), e.key)
      // A throughput is a rate, and only throughputs are.
      assert.equal(e.kind === MetricKind.rate, /_per_s$/.test(e.key), e.key)
    }
  })
})
