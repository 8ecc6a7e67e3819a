export * from './errors.ts'
export * from './triad-switches.ts'
