/** Policy engines: fresh and stale engines serving `policy.generate` with continuous batching. */
export * from './engine.ts'
export * from './errors.ts'
export * from './version-policy.ts'
