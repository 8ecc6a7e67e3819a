import type { TrajectoryLogRecord } from '../../actors/index.ts'
import type { ChatMessage, ToolSchema } from '../../protocols/index.ts'
import { openAiMessages, rowMetrics } from './openai-messages.ts'

/**
 * One exported episode: a row of `triad trajectories`' JSONL or parquet file. Field names follow
 * the OpenAI chat shape (`messages`, `tools`, as DemyAgent's and verl's multi-turn sets) and the
 * token view of what the learner trained on (the arrays are `[T]`, T the episode's tokens).
 */
export interface TrajectoryRow {
  /** Run id. */
  run: string
  task: string
  /** The group's id (`<rollout id>-<counter>`): the G samples of one instance share it. */
  group_id: string
  /** The group's stream sequence number. */
  group_seq: number
  /** The sample's place in its group, from 0. */
  sample: number
  /** Instance index and seed (the instance can be replayed from them) and its difficulty level. */
  index: number
  seed: number
  difficulty: number
  /** The learner version when the group started. */
  started_version: number
  /** The learner version the step that trained on it produced (1 for the first step). */
  trained_step: number
  /** Outcome reward of the episode (task reward, before shaping). */
  reward: number
  /** Final session status (`completed`, `turn_limit`, ...). */
  status: string
  turns: number
  stale_turns: number
  /** Task metrics of the final step (`success`, `step_good/<j>`, `turns`, ...; see `rowMetrics`). */
  metrics: Record<string, number>
  /**
   * The episode as OpenAI chat messages (a valid OpenAI conversation, see `openAiMessages`); empty
   * for a run made before triad kept them.
   */
  messages: ChatMessage[]
  /** The task's tools as OpenAI schemas; empty for a task this triad does not know. */
  tools: ToolSchema[]
  /** Token ids `[T]`. */
  input_ids: number[]
  /** `[T]` 1 on generated tokens (trained on), 0 elsewhere. */
  loss_mask: number[]
  /** `[T]` behavior log-probabilities (float32 values; 0 where the mask is 0). */
  logprobs: number[]
  /** `[T]` weight version that generated each token (-1 where the mask is 0). */
  versions: number[]
  /** Offsets in `input_ids` where each assistant turn starts `[turns]`. */
  turn_starts: number[]
}

/**
 * The rows of a run's trajectory log, one per sample, in the order the learner trained on them.
 * @param toolsOf the tools of a task by name (undefined for an unknown task: the row gets `[]`).
 */
export function trajectoryRows(
  run: string,
  records: readonly TrajectoryLogRecord[],
  toolsOf: (task: string) => ToolSchema[] | undefined,
): TrajectoryRow[] {
  const rows: TrajectoryRow[] = []
  for (const r of records) {
    const g = r.group
    const tools = toolsOf(g.task) ?? []
    g.samples.forEach((s, i) => {
      rows.push({
        run,
        task: g.task,
        group_id: g.group_id,
        group_seq: r.seq,
        sample: i,
        index: g.index,
        seed: g.seed,
        difficulty: g.difficulty,
        started_version: g.started_version,
        trained_step: r.step,
        reward: s.reward,
        status: s.status,
        turns: s.turns,
        stale_turns: s.stale_turns,
        metrics: rowMetrics(s.metrics),
        messages: openAiMessages(s.messages ?? []),
        tools,
        input_ids: Array.from(s.tokens),
        loss_mask: Array.from(s.loss_mask),
        logprobs: Array.from(s.logprobs),
        versions: Array.from(s.versions),
        turn_starts: Array.from(s.turn_starts),
      })
    })
  }
  return rows
}
