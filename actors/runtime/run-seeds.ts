/**
 * The seeds of every random stream of a run, derived from the run's one seed (`recipe.seed`) in
 * this one block (STYLE.md 9): a reader finds here which stream a number feeds, and two streams
 * never share a seed by accident. The offsets are the ones the run has always used, so a seed gives
 * the same run as before this block existed.
 */
export function runSeeds(seed: number) {
  return Object.freeze({
    /** The policy's initial weights (before the cold-start SFT) and the SFT's data order. */
    policy: seed,
    /** The reward model's initial weights (the reward actor's and the learner's copy). */
    rewardModel: seed + 7,
    /** The i-th expert episode of a task for the cold-start SFT and the tokenizer's corpus (instance and mistakes). */
    sftExpert: (i: number) => seed * 7919 + i,
    /** The i-th expert episode of a task the reward model's cold start trains on. */
    rewardModelSftTrain: (i: number) => seed * 7919 + 1_000_003 + i,
    /** The i-th expert episode of a task the reward model's cold start measures accuracy on. */
    rewardModelSftHeldOut: (i: number) => seed * 7919 + 2_000_003 + i,
    /** The i-th episode of a task the policy plays for the reward model's cold start to train on (instance and samples). */
    rewardModelSftPolicyTrain: (i: number) => seed * 7919 + 3_000_003 + i,
    /** The i-th episode of a task the policy plays for the reward model's cold start to measure accuracy on. */
    rewardModelSftPolicyHeldOut: (i: number) => seed * 7919 + 4_000_003 + i,
    /** The i-th env worker of the rollout process (its sessions' random instances). */
    envWorker: (i: number) => seed + i,
    /** Cross-policy sampling: which turns go to a stale engine. */
    policyRouter: seed + 17,
    /** The reward actor's judgement sampling. */
    rewardActor: seed + 23,
    /** The rollout driver: task choice, instance seeds and each episode's sampling seed. */
    rollout: seed + 101,
    /** The held-out evaluations (periodic and final: the same instances and samples each time). */
    heldOutEvaluation: seed + 4242,
  })
}

/** The seeds of a run's random streams (`runSeeds`). */
export type RunSeeds = ReturnType<typeof runSeeds>

/**
 * The stream of the rollout driver that draws which groups are judged, from the driver's seed: its
 * own stream, so the share judged does not change the task sequence.
 */
export const annotateSeedOf = (rolloutSeed: number) => rolloutSeed ^ 0x5bd1e995

/**
 * The seed of the reward model's `update`-th draw of judged steps. It does not depend on the
 * run's seed (two runs draw alike from the same judgements).
 */
export const judgedStepsSeedOf = (update: number) => 7 + update

/**
 * The per-episode seeds, each a function of a stream's seed above (the formulas the run has always
 * used, so a seed gives the same run as before they were gathered here).
 */
export const episodeSeeds = Object.freeze({
  /** The n-th group of the rollout driver (its instance; `runSeeds().rollout` is the driver's seed). */
  group: (driverSeed: number, n: number) => (driverSeed * 1_000_003 + n) | 0,
  /** The `attempt`-th try (0 the first) of an episode whose environment session failed. */
  attempt: (samplingSeed: number, attempt: number) => samplingSeed + attempt * 7919,
  /** Turn `turn` (0-based) of an agent loop or a gateway episode: its sampling seed. */
  turn: (episodeSeed: number, turn: number) => (episodeSeed * 1_000 + turn) | 0,
  /** Turn `turn` of an evaluation episode played through `ModelPolicy`: its sampling seed. */
  evaluationTurn: (episodeSeed: number, turn: number) => (episodeSeed * 997 + turn) | 0,
  /**
   * Sample j of held-out instance i of an evaluation (the instance and its sampling), whatever the
   * model, so two checkpoints evaluated with one seed play the same episodes (`pairedDifference`).
   */
  evaluation: (seed: number, index: number, sample: number) => seed + index * 1_009 + sample * 7_919,
})
