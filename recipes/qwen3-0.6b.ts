/**
 * Qwen3-0.6B with LoRA adapters on calc and maze: SFT on the scripted experts' episodes through
 * Qwen3's own chat template, then GRPO-TCR with outcome rewards. The model is downloaded first
 * (README "Starting from a pretrained model"):
 *
 *   huggingface-cli download Qwen/Qwen3-0.6B --local-dir models/Qwen3-0.6B
 *   triad run recipes/qwen3-0.6b.ts
 *
 * It runs on the native engine's CPU backend, slowly: a LoRA step over 2x512 tokens at the
 * Qwen2.5-0.5B shape takes about 35 s on 2 cores (docs/native-engine.md); on the wasm backend the
 * model does not fit a training step (docs/results/2026-12-02-pretrained-on-wasm-278b90d.md).
 */
import { defineRecipe } from './define-recipe.ts'

export default defineRecipe({
  name: 'qwen3-0_6b',
  seed: 0,
  tasks: [{ name: 'calc' }, { name: 'maze' }],
  model: {
    hf: 'models/Qwen3-0.6B',
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
