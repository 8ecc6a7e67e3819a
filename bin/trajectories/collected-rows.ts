import type { PlayedEpisode } from '../../actors/index.ts'
import type { ChatMessage, ToolSchema } from '../../protocols/index.ts'
import { openAiMessages, rowMetrics } from './openai-messages.ts'
import type { RowColumn } from './trajectory-file.ts'

/**
 * One episode that `triad collect` played with a served model: a row of its JSONL or parquet
 * file. The fields it shares with `triad trajectories`' rows (`TrajectoryRow`) have the same names
 * and meaning; there is no token view (the endpoint's tokens are not triad's) and no run. The
 * whole conversation is kept, the model's invalid actions, failed tool calls and what it did next
 * included, so `sft.datasets` can read it back as it is.
 */
export interface CollectedRow {
  /** The policy that played it: `openai:<chat-completions URL>`. */
  policy: string
  /** The model name sent to the endpoint. */
  model: string
  task: string
  /** Split of the instance (`train` unless `--split eval`). */
  split: string
  /** Instance index, seed (the instance can be replayed from them) and difficulty level. */
  index: number
  seed: number
  difficulty: number
  /** Outcome reward of the episode. */
  reward: number
  /** Final session status (`completed`, `turn_limit`, `invalid_action`, ...). */
  status: string
  /** Assistant turns. */
  turns: number
  /** Task metrics of the final step (`success`, `invalid_actions`, `turns`, ...; see `rowMetrics`). */
  metrics: Record<string, number>
  /** The episode as OpenAI chat messages (a valid OpenAI conversation, see `openAiMessages`). */
  messages: ChatMessage[]
  /** The task's tools as OpenAI schemas. */
  tools: ToolSchema[]
}

/** Parquet columns of `CollectedRow`. */
export const COLLECTED_COLUMNS: readonly RowColumn<CollectedRow>[] = [
  { name: 'policy', type: 'STRING' },
  { name: 'model', type: 'STRING' },
  { name: 'task', type: 'STRING' },
  { name: 'split', type: 'STRING' },
  { name: 'index', type: 'INT32' },
  { name: 'seed', type: 'INT64' },
  { name: 'difficulty', type: 'INT32' },
  { name: 'reward', type: 'DOUBLE' },
  { name: 'status', type: 'STRING' },
  { name: 'turns', type: 'INT32' },
  { name: 'metrics', type: 'JSON' },
  { name: 'messages', type: 'JSON' },
  { name: 'tools', type: 'JSON' },
]

/** The row of one played episode, instance `index`. */
export function collectedRow(policy: string, model: string, index: number, t: PlayedEpisode): CollectedRow {
  return {
    policy,
    model,
    task: t.task,
    split: t.split,
    index,
    seed: t.seed,
    difficulty: t.difficulty,
    reward: t.reward,
    status: t.status,
    turns: t.stepGood.length,
    metrics: rowMetrics(t.metrics),
    messages: openAiMessages(t.messages),
    tools: t.tools,
  }
}
