export * from './errors.ts'
export * from './trajectory-stream.ts'
