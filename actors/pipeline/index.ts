export * from './errors.ts'
export * from './learner-loop.ts'
export * from './trajectory-stream.ts'
