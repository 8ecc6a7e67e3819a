export * from './cold-start.ts'
export * from './config.ts'
export * from './learner-node.ts'
export * from './rollout-node.ts'
