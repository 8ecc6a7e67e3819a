/**
 * Qwen2.5-0.5B-Instruct with LoRA adapters on calc and maze, the twin of `qwen3-0.6b.ts` on the
 * Qwen2 architecture (q/k/v biases, no per-head q/k norm, a tied head): SFT on the scripted experts'
 * episodes through Qwen2.5's own chat template, then GRPO-TCR with outcome rewards. The model is
 * downloaded first (README "Starting from a pretrained model"):
 *
 *   huggingface-cli download Qwen/Qwen2.5-0.5B-Instruct --local-dir models/Qwen2.5-0.5B-Instruct
 *   triad run recipes/qwen2.5-0.5b.ts
 *
 * It runs on the native engine's CPU backend: a LoRA step over 2x512 tokens at this shape takes
 * about 35 s on 2 cores, generation 7 tokens/s at batch 1 (docs/native-engine.md).
 */
import { defineRecipe } from './define-recipe.ts'

export default defineRecipe({
  name: 'qwen2_5-0_5b',
  seed: 0,
  tasks: [{ name: 'calc' }, { name: 'maze' }],
  model: {
    hf: 'models/Qwen2.5-0.5B-Instruct',
    lora: { rank: 16, alpha: 32 },
    contextLength: 2048,
  },
  sft: { epochs: 1, batchSize: 4, expertTrajectoriesPerTask: 64, lr: 1e-4 },
  rl: { groupSize: 8, lr: 2e-5 },
  pipeline: { minBatchGroups: 4, bufferGroups: 16, concurrency: 32, maxTurns: 8, maxNewTokens: 256 },
  evaluation: { every: 25, k: 4, instancesPerTask: 16 },
  checkpoints: { every: 25, keep: 3 },
  budget: { maxSteps: 200 },
})
