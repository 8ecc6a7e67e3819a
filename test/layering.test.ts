import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

/**
 * The layer table of docs/design.md#layers, checked on the source: an import never points up the
 * table, a cross-folder import goes through the folder's `index.ts`, tensors live only in `gpu/`,
 * and progress bars only in `bin/`.
 */

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** What each top-level folder may import (besides itself). */
const mayImport: Readonly<Record<string, readonly string[]>> = {
  protocols: [],
  gpu: ['protocols'],
  sandboxes: ['protocols'],
  actors: ['protocols', 'gpu', 'sandboxes'],
  recipes: ['protocols', 'gpu', 'sandboxes', 'actors'],
  bin: ['protocols', 'gpu', 'sandboxes', 'actors', 'recipes'],
}

/** Every `.ts` file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) return sources(p)
    return name.endsWith('.ts') ? [p] : []
  })
}

/** The module specifiers a file imports or re-exports (static and dynamic). */
function specifiers(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const out: string[] = []
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'/g)) out.push(m[1]!)
  for (const m of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) out.push(m[1]!)
  return out
}

/** `[file, specifier]` of every import in the layered folders. */
function imports(): { folder: string; file: string; spec: string }[] {
  return Object.keys(mayImport).flatMap((folder) =>
    sources(join(root, folder)).flatMap((file) => specifiers(file).map((spec) => ({ folder, file, spec }))),
  )
}

describe('layering', () => {
  it('layering - no import points up the layer table, and another folder is reached through its index.ts', () => {
    const bad: string[] = []
    for (const { folder, file, spec } of imports()) {
      if (!spec.startsWith('.')) continue
      const target = relative(root, resolve(dirname(file), spec))
      const top = target.split('/')[0]!
      if (top === folder) continue
      const where = `${relative(root, file)} imports ${spec}`
      if (!mayImport[folder]!.includes(top)) bad.push(`${where} (${folder}/ may not import ${top}/)`)
      else if (target !== `${top}/index.ts`) bad.push(`${where} (not through ${top}/index.ts)`)
    }
    assert.deepEqual(bad, [])
  })

  it('layering - tensors only in gpu/: protocols/, sandboxes/, actors/ and recipes/ import no tfjs', () => {
    const bad = imports()
      .filter(({ folder, spec }) => folder !== 'gpu' && folder !== 'bin' && spec.startsWith('@tensorflow/'))
      .map(({ file, spec }) => `${relative(root, file)} imports ${spec}`)
    assert.deepEqual(bad, [])
  })

  it('layering - progress bars only in bin/: no other folder imports cli-progress', () => {
    const bad = imports()
      .filter(({ folder, spec }) => folder !== 'bin' && spec === 'cli-progress')
      .map(({ file }) => relative(root, file))
    assert.deepEqual(bad, [])
  })

  it('layering - the check sees imports: gpu/ imports tfjs, actors/ imports gpu/index.ts', () => {
    const all = imports()
    assert.ok(all.some(({ folder, spec }) => folder === 'gpu' && spec === '@tensorflow/tfjs'))
    assert.ok(all.some(({ folder, spec }) => folder === 'actors' && spec.endsWith('/gpu/index.ts')))
    assert.ok(all.some(({ folder, spec }) => folder === 'bin' && spec === 'cli-progress'))
  })
})
