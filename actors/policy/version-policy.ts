/** What an engine knows when a `weights.published` announcement arrives. */
export interface VersionPolicyInput {
  /** A stale engine (AgentRL cross-policy sampling). */
  stale: boolean
  /** A stale engine takes version v only when `v % staleEvery === 0`. */
  staleEvery: number
  /** The newest version the engine has taken (loaded or loading). */
  current: number
  /** Whether it has taken any announced version yet (false while it runs on its initial weights). */
  announced: boolean
}

/**
 * Whether an engine takes an announced version (docs/design.md#algorithms, cross-policy sampling:
 * stale engines' weights change every `staleEvery` learner steps). The first announced version is
 * always taken (so an engine never serves seed weights once a learner exists); after that only
 * newer versions, and for a stale engine only multiples of `staleEvery`.
 */
export function acceptsVersion(input: VersionPolicyInput, version: number): boolean {
  if (!input.announced) return true
  if (version <= input.current) return false
  return !input.stale || version % input.staleEvery === 0
}
