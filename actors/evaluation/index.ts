export * from './evaluate.ts'
export * from './model-policy.ts'
