import {
  AdamW,
  asChatFormat,
  type ChatFormat,
  learnTaskTokenizer,
  type RenderedChat,
  renderChat,
  type SftLogRecord,
  Tokenizer,
  type Transformer,
  trainSft,
  warmupCosine,
  withSftWorkers,
} from '../../gpu/index.ts'
import { SessionStatus } from '../../protocols/index.ts'
import { getTask, playExpert } from '../environment/index.ts'
import { runSeeds } from '../runtime/index.ts'
import type { NodeConfig } from './config.ts'
import { NoSftDataError } from './errors.ts'
import { type ExpertEpisode, readSftDatasets } from './sft-dataset.ts'

/**
 * Real end-to-end episodes of the scripted experts (DemyAgent, arXiv 2510.11701: mistakes and
 * recoveries included), `count` per task of the mix, seeded from the run's seed. They are the
 * cold-start SFT data and the corpus the run's byte-pair merges are learned from.
 */
export async function playExperts(config: NodeConfig, count: number): Promise<ExpertEpisode[]> {
  const out: ExpertEpisode[] = []
  for (const entry of config.tasks) {
    // Agent and MCP tasks have no scripted expert: their episodes are the agent's or the policy's.
    if (entry.agent || entry.mcp) continue
    const task = getTask(entry.name)
    for (let i = 0; i < count; i++) {
      const seed = runSeeds(config.seed).sftExpert(i)
      const t = await playExpert(
        task,
        { difficulty: entry.difficulty, split: 'train', randomSeed: seed },
        { errorRate: config.sft.errorRate, successRate: config.sft.successRate, seed },
      )
      out.push({ messages: t.messages, tools: t.tools, status: t.status })
    }
  }
  return out
}

/**
 * The first `take` episodes of each task of a corpus that `playExperts` made with `perTask`
 * episodes per task (`take <= perTask`): the very episodes `playExperts(config, take)` plays, since
 * the i-th episode of a task has the same seed whatever the count.
 */
export function firstEpisodesPerTask(
  episodes: readonly ExpertEpisode[],
  perTask: number,
  take: number,
): ExpertEpisode[] {
  if (take > perTask) throw new RangeError(`take (${take}) must be <= perTask (${perTask})`)
  const out: ExpertEpisode[] = []
  if (perTask <= 0) return out
  for (let start = 0; start < episodes.length; start += perTask)
    out.push(...episodes.slice(start, start + take))
  return out
}

/**
 * The episodes that may be SFT data: every one but those that ended in `task_error` (the task
 * itself failed, for example a sandbox that did not answer: the conversation shows the failure,
 * not the task), with the number dropped.
 */
export function sftEpisodes(episodes: readonly ExpertEpisode[]): { kept: ExpertEpisode[]; dropped: number } {
  const kept = episodes.filter((e) => e.status !== SessionStatus.TaskError)
  return { kept, dropped: episodes.length - kept.length }
}

/**
 * The cold-start SFT's conversations: the scripted experts' episodes (`played`, or played now:
 * `sft.expertTrajectoriesPerTask` per task) unless `sft.experts` is false, then every row of `sft.datasets`
 * in order (`readSftDatasets`), all rendered alike by `expertExamples`.
 * @throws SftDatasetError at the first bad dataset row (before anything is trained).
 */
export async function sftTrainingEpisodes(
  config: NodeConfig,
  played?: readonly ExpertEpisode[],
): Promise<{ episodes: ExpertEpisode[]; fromDatasets: number }> {
  const fromDatasets = await readSftDatasets(config.sft.datasets ?? [])
  const experts =
    config.sft.experts === false
      ? []
      : (played ?? (await playExperts(config, config.sft.expertTrajectoriesPerTask)))
  return { episodes: [...experts, ...fromDatasets], fromDatasets: fromDatasets.length }
}

/**
 * Expert episodes rendered with the chat template (loss on assistant tokens only): triad's own
 * (`tokenizer` a `Tokenizer`) or a pretrained model's (`ChatFormat.renderChat`). An episode
 * longer than the context is cut to its first `contextLength + 1` tokens (its first turns still
 * teach the format and the first moves).
 */
export function expertExamples(
  episodes: readonly ExpertEpisode[],
  tokenizer: Tokenizer | ChatFormat,
  contextLength: number,
): { examples: RenderedChat[]; truncated: number } {
  const format = asChatFormat(tokenizer)
  const examples: RenderedChat[] = []
  let truncated = 0
  for (const t of episodes) {
    const chat = format.renderChat(t.messages, t.tools)
    if (chat.ids.length > contextLength + 1) {
      truncated++
      examples.push({
        ids: chat.ids.slice(0, contextLength + 1),
        lossMask: chat.lossMask.slice(0, contextLength + 1),
      })
    } else examples.push(chat)
  }
  return { examples, truncated }
}

/**
 * Fewest expert episodes per task the run's byte-pair merges are learned from (more when the SFT
 * plays more); the SFT trains on `sft.expertTrajectoriesPerTask` of them (`firstEpisodesPerTask`).
 */
export const TOKENIZER_CORPUS_PER_TASK = 64

/**
 * The run's tokenizer: byte-level with `merges` byte-pair merges learned from the rendered expert
 * episodes (docs/design.md#the-policy-model, small models: about 3 times fewer tokens per
 * trajectory with 512).
 */
export function runTokenizer(episodes: readonly ExpertEpisode[], merges: number): Tokenizer {
  const byteLevel = new Tokenizer()
  if (merges <= 0 || episodes.length === 0) return byteLevel
  return learnTaskTokenizer(
    episodes.map((t) => renderChat(byteLevel, t.messages, { tools: t.tools }).ids),
    merges,
  )
}

/**
 * Runs the cold-start SFT on `model` with the episodes that did not end in `task_error`
 * (`sftEpisodes`; `dropped` says how many did); returns the loss curve. `onLog` gets every step's record and
 * the number of steps the whole SFT takes (`sftStepCount`), for progress views. With
 * `config.sft.threads` above 1 the steps are data-parallel over that many threads (`SftWorkers`,
 * each on `backend`, the learner's own backend name).
 * @throws SftWorkerError when a gradient thread fails; NoSftDataError when no episode is left.
 */
export async function coldStart(
  model: Transformer,
  tokenizer: Tokenizer | ChatFormat,
  episodes: readonly ExpertEpisode[],
  config: NodeConfig,
  onLog: (record: SftLogRecord, totalSteps: number) => void,
  backend = 'wasm',
): Promise<{ records: SftLogRecord[]; examples: number; truncated: number; dropped: number }> {
  const { kept, dropped } = sftEpisodes(episodes)
  const { examples, truncated } = expertExamples(kept, tokenizer, model.config.contextLength)
  if (examples.length === 0)
    throw new NoSftDataError(
      dropped > 0
        ? `no expert trajectories to train on: all ${dropped} ended in task_error (the task failed; see the tool messages of an episode)`
        : 'no SFT data: sft.expertTrajectoriesPerTask is 0 (or sft.experts false) and sft.datasets has no row',
    )
  return withSftWorkers(config.sft.threads ?? 1, model.config, backend, async (workers) => {
    const optimizer = new AdamW(model.params)
    try {
      const records = await trainSft(model, optimizer, examples, {
        epochs: config.sft.epochs,
        batchTokens: config.sft.batchTokens,
        maxSteps: config.sft.maxSteps,
        workers,
        scheduleFor: (steps) =>
          warmupCosine({
            peakLr: config.sft.lr,
            warmupSteps: Math.max(1, Math.floor(steps / 10)),
            totalSteps: steps,
          }),
        seed: config.seed,
        onLog,
      })
      return { records, examples: examples.length, truncated, dropped }
    } finally {
      optimizer.dispose()
    }
  })
}
