/** Policy engines: fresh and stale engines serving `policy.generate` with continuous batching. */
export {
  NODE_ENGINE_DRAIN_MS,
  type PolicyEngine,
  type PolicyEngineOptions,
  type PolicyEngineStats,
  policyAccepts,
  policyReplies,
  startPolicyEngine,
  type WeightSource,
} from './engine.ts'
export { acceptsVersion, type VersionPolicyInput } from './version-policy.ts'
