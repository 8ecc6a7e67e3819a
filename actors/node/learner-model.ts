import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { chooseBackend, loadTokenizer, saveTokenizer, type Tokenizer } from '../../gpu/index.ts'
import type { Child, ChildContext, Transport } from '../runtime/index.ts'
import { firstEpisodesPerTask, playExperts, runTokenizer, TOKENIZER_CORPUS_PER_TASK } from './cold-start.ts'
import type { NodeConfig } from './config.ts'
import { type LearnerModel, LearnerNames } from './learner-names.ts'
import { loadPretrainedPolicy } from './pretrained-policy.ts'
import { publishRunTokenizer } from './run-tokenizer.ts'
import type { ExpertEpisode } from './sft-dataset.ts'

/**
 * Starts the `model` child of the learner tree: chooses the tensor backend, then settles what the
 * policy is before any weights, registered as `LearnerNames.model` while it runs. The run's
 * tokenizer is learned once (byte-pair merges from the expert corpus, whose first
 * `sft.expertTrajectoriesPerTask` of each task are kept for the cold-start SFT), kept in the run
 * directory (`tokenizer.json`) for resumes and published to the object store for the other nodes;
 * a resume loads it. A pretrained policy (`config.pretrained`) brings its own tokenizer and chat
 * template instead: nothing is learned or published, and its base is loaded once. No actors.
 */
export async function startLearnerModel(
  ctx: ChildContext,
  transport: Transport,
  config: NodeConfig,
  log: (line: string) => void,
): Promise<Child> {
  const backend = await chooseBackend({ backend: config.backend, threads: config.threads?.learner, log })
  const tokenizerFile = join(config.runDir, 'tokenizer.json')
  const pretrained = config.pretrained ? await loadPretrainedPolicy(config) : undefined
  let tokenizer: Tokenizer | undefined
  // The SFT data when the tokenizer is learned here: the first `sft.expertTrajectoriesPerTask` of each task
  // of its corpus (which has at least TOKENIZER_CORPUS_PER_TASK per task).
  let experts: ExpertEpisode[] | undefined
  if (pretrained)
    log(
      `tokenizer and chat template: the pretrained model's (${pretrained.chat.vocabSize} ids, ${pretrained.dir}); LoRA ${JSON.stringify(pretrained.lora)}`,
    )
  else if (existsSync(tokenizerFile)) tokenizer = await loadTokenizer(tokenizerFile)
  else {
    const merges = config.tokenizerMerges ?? 0
    const sftCount =
      config.sft.enabled && config.sft.experts !== false ? config.sft.expertTrajectoriesPerTask : 0
    const count = Math.max(sftCount, merges > 0 ? TOKENIZER_CORPUS_PER_TASK : 0)
    const corpus = count > 0 ? await playExperts(config, count) : []
    experts = firstEpisodesPerTask(corpus, count, sftCount)
    tokenizer = runTokenizer(corpus, merges)
    await saveTokenizer(tokenizerFile, tokenizer)
    log(
      `tokenizer: ${tokenizer.vocabSize} tokens (${merges} byte-pair merges learned from ${corpus.length} expert episodes)`,
    )
  }
  if (tokenizer) await publishRunTokenizer(transport, config.run, tokenizer)
  const model: LearnerModel = {
    backend,
    ...(pretrained ? { pretrained } : {}),
    ...(tokenizer ? { tokenizer } : {}),
    chat: pretrained?.chat ?? tokenizer!,
    modelConfig: pretrained?.modelConfig ?? { ...config.model, vocabSize: tokenizer!.vocabSize },
    ...(experts ? { experts } : {}),
  }
  const unregister = ctx.system.register(LearnerNames.model, model)
  return { actors: [], stop: async () => unregister() }
}
