export * from './diagnostics/index.ts'
export * from './launcher/index.ts'
export * from './runtime/index.ts'
