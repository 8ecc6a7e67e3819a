export * from './batch.ts'
export * from './behaviour.ts'
export * from './errors.ts'
export * from './learner.ts'
