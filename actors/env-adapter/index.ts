export * from './difficulty-adapter.ts'
export * from './difficulty-view.ts'
export * from './env-adapter-actor.ts'
export * from './errors.ts'
