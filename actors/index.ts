export * from './launcher/index.ts'
export * from './runtime/index.ts'
