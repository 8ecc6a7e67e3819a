import {
  type NodeConfig,
  startActorSystem,
  startLearnerNode,
  startRolloutNode,
  type Transport,
} from '../../actors/index.ts'
import type { NodeHandle } from '../../actors/testing.ts'

/** A learner node and a rollout node of one run, started in this process by a test. */
export interface LearnerRolloutPair {
  /** The learner node: its `done` resolves once it has taken `maxSteps` steps. */
  learner: NodeHandle
  rollout: NodeHandle
  /**
   * Stops the rollout node, then the learner node and the rollout's actor system, then closes
   * both transports. A second call waits for the first and does nothing more.
   */
  stop(): Promise<void>
}

/**
 * Starts the learner node of `config` (id `0`), then its rollout node (id `0`, in an actor system
 * of its own named `rollout-<run>`), each on the transport `connect` gives for its role (`learner`,
 * `rollout`): one NATS connection each, or one in-process transport for both. When either fails to
 * start, what was started is stopped before the error is thrown.
 */
export async function startLearnerRolloutPair(
  config: NodeConfig,
  connect: (role: 'learner' | 'rollout') => Promise<Transport>,
): Promise<LearnerRolloutPair> {
  const lt = await connect('learner')
  const rt = await connect('rollout')
  const system = startActorSystem({ name: `rollout-${config.run}` })
  let learner: NodeHandle | undefined
  let rollout: NodeHandle | undefined
  let stopped: Promise<void> | undefined
  const stop = () => {
    stopped ??= (async () => {
      await rollout?.stop()
      await learner?.stop()
      await system.stop()
      await lt.close()
      await rt.close()
    })()
    return stopped
  }
  try {
    learner = await startLearnerNode(system, lt, config, '0')
    rollout = await startRolloutNode(system, rt, config, '0')
  } catch (err) {
    await stop()
    throw err
  }
  return { learner, rollout, stop }
}
