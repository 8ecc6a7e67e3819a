export * from './bounded-play.ts'
export * from './evaluate.ts'
export * from './model-policy.ts'
