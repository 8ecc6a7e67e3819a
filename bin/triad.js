#!/usr/bin/env node
// The installed `triad` command: loads the TypeScript CLI through tsx. Both of tsx's loaders are
// registered, as `node --import tsx` does: a recipe file outside a `"type": "module"` package
// (/tmp/my-recipe.ts) is CommonJS to Node, and its imports of this package's ES modules need tsx's
// CommonJS loader (with the ES module loader alone Node fails with "require() ... in a cycle").
import { register as registerCjs } from 'tsx/cjs/api'
import { register } from 'tsx/esm/api'

registerCjs()
register()
await import('./triad.ts')
