export * from './batch.ts'
export * from './errors.ts'
export * from './learner.ts'
