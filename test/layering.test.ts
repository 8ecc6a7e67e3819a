import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

/**
 * The layer table of docs/design.md#layers, checked on the source: an import never points up the
 * table, a cross-folder import goes through the folder's `index.ts` (between the top-level folders,
 * and between the rooms of `actors/`), no import circle inside `actors/`, tensors live only in
 * `gpu/`, progress bars only in `bin/`, every `as unknown as` outside the tests says why, and no
 * throw outside the tests is a bare `new Error` (each names a class of its room's `errors.ts`).
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

/** The names `text` lists in its `import {..}` / `export {..}` clauses from a path ending in `suffix`. */
function namesFrom(text: string, suffix: string): string[] {
  const out: string[] = []
  for (const m of text.matchAll(/(?:import|export)\s+(?:type\s+)?\{([^}]*)\}\s*from\s*'([^']+)'/g)) {
    if (!m[2]!.endsWith(suffix)) continue
    for (const part of m[1]!.split(',')) {
      const name = part
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)[0]!
      if (name) out.push(name)
    }
  }
  return out
}

/** `[file, specifier]` of every import in the layered folders. */
function imports(): { folder: string; file: string; spec: string }[] {
  return Object.keys(mayImport).flatMap((folder) =>
    sources(join(root, folder)).flatMap((file) => specifiers(file).map((spec) => ({ folder, file, spec }))),
  )
}

/** Every `.ts` file of the layered folders, relative to the root. */
const layered = () => Object.keys(mayImport).flatMap((folder) => sources(join(root, folder)))

/** The files of `actors/` each file of `actors/` imports (type imports and re-exports included). */
function actorsGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of sources(join(root, 'actors'))) {
    const from = relative(root, file)
    const to = specifiers(file)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => relative(root, resolve(dirname(file), spec)))
      .filter((target) => target.startsWith('actors/'))
    graph.set(from, to)
  }
  return graph
}

/** The strongly connected components of more than one file (Tarjan's algorithm): the import circles. */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const out: string[][] = []
  let next = 0
  const visit = (v: string) => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1) out.push(component.sort())
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) visit(v)
  return out
}

/** The room of an `actors/` file: its first folder below `actors/` (`actors/index.ts` is its own). */
const room = (path: string) => path.split('/').slice(0, 2).join('/')

describe('layering', () => {
  it('layering - no import circle inside actors/', () => {
    assert.deepEqual(circles(actorsGraph()), [])
  })

  it('layering - the circle check finds a circle: a graph a -> b -> c -> a, d -> a', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ])
    assert.deepEqual(circles(graph), [['a', 'b', 'c']])
    assert.ok(actorsGraph().get('actors/index.ts')!.includes('actors/node/index.ts'))
  })

  it('layering - a room of actors/ reaches another room through its index.ts', () => {
    const bad: string[] = []
    for (const [from, targets] of actorsGraph())
      for (const target of targets)
        if (room(target) !== room(from) && from !== 'actors/index.ts' && !target.endsWith('/index.ts'))
          bad.push(`${from} imports ${target}`)
    assert.deepEqual(bad, [])
  })

  it('layering - every `as unknown as` outside the tests has a comment saying why, on its line or the line next to it', () => {
    const bad: string[] = []
    for (const file of layered()) {
      const lines = readFileSync(file, 'utf8').split('\n')
      lines.forEach((line, i) => {
        if (!line.includes('as unknown as')) return
        if (line.includes('//') || [lines[i - 1], lines[i + 1]].some((l) => l?.trim().startsWith('//')))
          return
        bad.push(`${relative(root, file)}:${i + 1}`)
      })
    }
    assert.deepEqual(bad, [])
  })

  it('layering - no bare `throw new Error(` outside the tests: each throw names its error class (from the errors.ts of its room), or says why not with `// bare: <why>` on its line or the line above', () => {
    const bad: string[] = []
    for (const file of layered()) {
      const lines = readFileSync(file, 'utf8').split('\n')
      lines.forEach((line, i) => {
        if (!/\bthrow\s+new\s+Error\s*\(/.test(line)) return
        if ([line, lines[i - 1]].some((l) => /\/\/\s*bare: \S/.test(l ?? ''))) return
        bad.push(`${relative(root, file)}:${i + 1}`)
      })
    }
    assert.deepEqual(bad, [])
  })

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

  it('layering - an index.ts exports only what another folder imports through it; what only the tests need is in testing.ts, which only test/ imports', () => {
    const bad: string[] = []
    for (const folder of ['protocols', 'gpu', 'sandboxes', 'actors']) {
      const exported = namesFrom(readFileSync(join(root, folder, 'index.ts'), 'utf8'), '')
      const used = new Set<string>()
      for (const other of Object.keys(mayImport).filter((f) => f !== folder))
        for (const file of sources(join(root, other))) {
          const text = readFileSync(file, 'utf8')
          for (const name of namesFrom(text, `/${folder}/index.ts`)) used.add(name)
          // a namespace import: the names read off it
          for (const ns of text.matchAll(
            new RegExp(
              `import\\s+(?:type\\s+)?\\*\\s+as\\s+(\\w+)\\s+from\\s+'[^']*/${folder}/index\\.ts'`,
              'g',
            ),
          ))
            for (const m of text.matchAll(new RegExp(`\\b${ns[1]}\\.(\\w+)`, 'g'))) used.add(m[1]!)
          // a dynamic import(): the names the file reads off the module
          if (new RegExp(`import\\(\\s*'[^']*/${folder}/index\\.ts'`).test(text))
            for (const name of exported) if (new RegExp(`\\b${name}\\b`).test(text)) used.add(name)
        }
      for (const name of exported) if (!used.has(name)) bad.push(`${folder}/index.ts exports ${name}`)
    }
    for (const { file, spec } of imports())
      if (spec.endsWith('/testing.ts') && !spec.startsWith('./'))
        bad.push(`${relative(root, file)} imports ${spec}`)
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
