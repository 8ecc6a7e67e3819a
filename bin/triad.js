#!/usr/bin/env node
// The installed `triad` command: loads the TypeScript CLI through tsx.
import { register } from 'tsx/esm/api'

register()
await import('./triad.ts')
