import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { adaptersFromCheckpoint, freshAdapters, loadPretrainedPolicy } from '../../../actors/testing.ts'
import { CheckpointError, disposeTransformer, getWeights, saveCheckpoint } from '../../../gpu/index.ts'
import { useTestBackend } from '../../support/test-backend.ts'
import { writeTinyQwen3 } from '../../support/tiny-qwen3.ts'

/**
 * A run's pretrained policy in one process: the base loaded once with its own chat format, models
 * with the node config's LoRA settings on it, and adapter checkpoints read back onto it.
 */
describe('actors/node/pretrained-policy', () => {
  const root = mkdtempSync(join(tmpdir(), 'triad-pretrained-policy-'))
  const dir = join(root, 'tiny-qwen3')
  const lora = { rank: 2, alpha: 3, targets: ['k_proj', 'up_proj'] as const, dropout: 0.25 }
  const config = {
    model: { contextLength: 64 },
    pretrained: { dir, lora: { ...lora, targets: [...lora.targets] } },
  }
  before(async () => {
    await useTestBackend()
    await writeTinyQwen3(dir)
  })

  it('the base with its chat format; each LoRA setting reaches the model on it', async () => {
    const policy = await loadPretrainedPolicy(config)
    assert.equal(policy.chat.kind, 'jinja')
    assert.equal(policy.modelConfig.contextLength, 64) // model.contextLength caps the context
    assert.equal(policy.modelConfig.kvHeads, 1)
    const model = freshAdapters(policy, 7)
    assert.deepEqual(model.lora?.config, { ...lora, targets: [...lora.targets] })
    assert.equal(model.lora?.base, dir)
    // rank and targets: adapters on k_proj (16 -> 8) and up_proj (16 -> 32) only, of rank 2
    assert.deepEqual(Object.fromEntries([...model.params].map(([name, v]) => [name, v.shape])), {
      'layers.0.k_proj.lora_a': [16, 2],
      'layers.0.k_proj.lora_b': [2, 8],
      'layers.0.up_proj.lora_a': [16, 2],
      'layers.0.up_proj.lora_b': [2, 32],
    })
    // an adapter checkpoint reads back onto the same base; other LoRA settings are refused
    const ckpt = join(root, 'ckpt')
    await saveCheckpoint(ckpt, model, {})
    const again = await adaptersFromCheckpoint(policy, ckpt, 7)
    assert.deepEqual(await getWeights(again), await getWeights(model))
    await assert.rejects(
      adaptersFromCheckpoint({ ...policy, lora: { ...lora, rank: 4 } }, ckpt, 7),
      (err: Error) =>
        err instanceof CheckpointError && /LoRA settings .* differ from the run's/.test(err.message),
    )
    disposeTransformer(again)
    disposeTransformer(model)
    disposeTransformer(policy.base)
  })
})
