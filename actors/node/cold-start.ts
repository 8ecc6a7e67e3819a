import {
  AdamW,
  type RenderedChat,
  renderChat,
  type SftLogRecord,
  sftStepCount,
  type Tokenizer,
  type Transformer,
  trainSft,
  warmupCosine,
} from '../../gpu/index.ts'
import { getTask, playExpert } from '../environment/index.ts'
import type { NodeConfig } from './config.ts'

/**
 * Expert trajectories for the cold-start SFT (DemyAgent, arXiv 2510.11701): real end-to-end
 * episodes of the scripted experts, mistakes and recoveries included, rendered with the chat
 * template (loss on assistant tokens only). An episode longer than the context is cut to its
 * first `contextLength + 1` tokens (its first turns still teach the format and the first moves).
 */
export async function expertExamples(
  config: NodeConfig,
  tokenizer: Tokenizer,
  contextLength: number,
): Promise<{ examples: RenderedChat[]; truncated: number }> {
  const examples: RenderedChat[] = []
  let truncated = 0
  for (const entry of config.tasks) {
    const task = getTask(entry.name)
    for (let i = 0; i < config.sft.episodesPerTask; i++) {
      const seed = config.seed * 7919 + i
      const t = await playExpert(
        task,
        { difficulty: entry.difficulty, split: 'train', randomSeed: seed },
        { errorRate: config.sft.errorRate, successRate: config.sft.successRate, seed },
      )
      const chat = renderChat(tokenizer, t.messages, { tools: t.tools })
      if (chat.ids.length > contextLength + 1) {
        truncated++
        examples.push({
          ids: chat.ids.slice(0, contextLength + 1),
          lossMask: chat.lossMask.slice(0, contextLength + 1),
        })
      } else examples.push(chat)
    }
  }
  return { examples, truncated }
}

/** Runs the cold-start SFT on `model`; returns the loss curve. */
export async function coldStart(
  model: Transformer,
  tokenizer: Tokenizer,
  config: NodeConfig,
  onLog: (record: SftLogRecord) => void,
): Promise<{ records: SftLogRecord[]; examples: number; truncated: number }> {
  const { examples, truncated } = await expertExamples(config, tokenizer, model.config.contextLength)
  if (examples.length === 0) throw new Error('no expert trajectories: sft.expertTrajectoriesPerTask is 0')
  const steps = sftStepCount(examples, model, {
    epochs: config.sft.epochs,
    batchTokens: config.sft.batchTokens,
  })
  const optimizer = new AdamW(model.params)
  const records = await trainSft(model, optimizer, examples, {
    epochs: config.sft.epochs,
    batchTokens: config.sft.batchTokens,
    schedule: warmupCosine({
      peakLr: config.sft.lr,
      warmupSteps: Math.max(1, Math.floor(steps / 10)),
      totalSteps: steps,
    }),
    seed: config.seed,
    onLog,
  })
  optimizer.dispose()
  return { records, examples: examples.length, truncated }
}
