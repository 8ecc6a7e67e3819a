import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { decodeSafetensors } from '../../gpu/index.ts'
import { writeTinyQwen3 } from '../support/tiny-qwen3.ts'
import { RUN_STARTED, startTriad } from '../support/triad-process.ts'

const tinyHf = fileURLToPath(new URL('../../recipes/tiny-hf.ts', import.meta.url))
const defineRecipePath = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))

/** recipes/tiny-hf.ts with the step budget `maxSteps` (a resume may change only the budget), written into `dir`. */
function tinyHfWithSteps(dir: string, maxSteps: number): string {
  const file = join(dir, `tiny-hf-${maxSteps}.ts`)
  const source = readFileSync(tinyHf, 'utf8')
    .replace("from './define-recipe.ts'", `from ${JSON.stringify(defineRecipePath)}`)
    .replace("import type { RecipeInput } from './recipe-schema.ts'\n", '')
    .replace(' satisfies RecipeInput', '')
    .replace(/budget: \{[^}]*\}/, `budget: { maxSteps: ${maxSteps}, maxMinutes: 10 }`)
  assert.ok(source.includes(`maxSteps: ${maxSteps}`))
  writeFileSync(file, source)
  return file
}

/** Tensor names and shapes of a safetensors file. */
function shapesOf(file: string): Record<string, number[]> {
  const { tensors } = decodeSafetensors(readFileSync(file), file)
  return Object.fromEntries(Object.entries(tensors).map(([name, t]) => [name, t.shape]))
}

/**
 * End to end on a pretrained model: `triad run recipes/tiny-hf.ts` on a tiny random Qwen3-layout
 * checkpoint (BF16, the real Qwen3 tokenizer and chat template, one key/value head) with LoRA:
 * cold-start SFT through the model's template, RL steps whose weight versions are the adapters,
 * the SFT checkpoint evaluated by a `triad eval` process and the last one in the run. In one process
 * (`--in-process`): every role loads the model, and a process start costs seconds here.
 */
describe('e2e - triad run recipes/tiny-hf.ts (pretrained policy, LoRA)', () => {
  const modelDir = join(mkdtempSync(join(tmpdir(), 'triad-tiny-hf-model-')), 'tiny-qwen3')
  const env = { TRIAD_TINY_HF_DIR: modelDir }
  let finished: string | undefined
  before(async () => {
    await writeTinyQwen3(modelDir, { contextLength: 1024 })
  })

  it("e2e - SFT, RL steps and evaluation; checkpoints are PEFT adapters with the recipe's LoRA settings", async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-e2e-hf-'))
    const run = startTriad(['run', 'recipes/tiny-hf.ts', '--in-process', '--runs-dir', runsDir], env)
    const created = await run.waitForText(RUN_STARTED, 60_000)
    const { code } = await run.exited
    assert.equal(code, 0, `${run.stdout.join('\n')}\n${run.stderr()}`)
    const dir = created[2]!
    const out = run.stdout.join('\n')
    assert.match(out, /cold-start SFT done: \d+\/\d+ steps/)
    assert.match(out, /^stopping \(2 steps done\)$/m)
    // The learner used the model's own tokenizer: no tokenizer was learned for the run.
    assert.equal(existsSync(join(dir, 'tokenizer.json')), false)
    // recipes/tiny-hf.ts's model.lora (its module validates the recipe, model directory included, on import)
    const lora = { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj', 'down_proj'] }
    for (const name of ['sft', 'step-2', 'reward-sft', join('step-2', 'reward-model')]) {
      const ckpt = join(dir, 'checkpoints', name)
      assert.deepEqual(
        readdirSync(ckpt)
          .filter(
            (f) =>
              ![
                'learner.json',
                'optimizer.safetensors',
                'reward-model',
                'reward-model.json',
                'reward-sft.json',
              ].includes(f),
          )
          .sort(),
        ['adapter_config.json', 'adapter_model.safetensors', 'config.json'],
        name,
      )
      const config = JSON.parse(readFileSync(join(ckpt, 'config.json'), 'utf8'))
      assert.equal(config.base, modelDir)
      assert.deepEqual(config.lora, { ...lora, dropout: 0 })
      const peft = JSON.parse(readFileSync(join(ckpt, 'adapter_config.json'), 'utf8'))
      assert.equal(peft.r, lora.rank)
      assert.equal(peft.lora_alpha, lora.alpha)
      assert.deepEqual(peft.target_modules, lora.targets)
      assert.equal(peft.base_model_name_or_path, modelDir)
      // model.lora.rank and targets shape the adapters: rank 4 on q_proj (16 -> 2 heads x 8),
      // v_proj (16 -> 1 kv head x 8) and down_proj (32 -> 16) of the one layer, nothing else.
      const prefix = 'base_model.model.model.layers.0'
      assert.deepEqual(shapesOf(join(ckpt, 'adapter_model.safetensors')), {
        [`${prefix}.self_attn.q_proj.lora_A.weight`]: [4, 16],
        [`${prefix}.self_attn.q_proj.lora_B.weight`]: [16, 4],
        [`${prefix}.self_attn.v_proj.lora_A.weight`]: [4, 16],
        [`${prefix}.self_attn.v_proj.lora_B.weight`]: [8, 4],
        [`${prefix}.mlp.down_proj.lora_A.weight`]: [4, 32],
        [`${prefix}.mlp.down_proj.lora_B.weight`]: [16, 4],
      })
    }
    // The dynamic triad on the pretrained model: its reward model (adapters on the same base,
    // checked above) was cold-started, judged every step through the model's template with its
    // own verdict ids, and took consistency updates.
    const learnerLog = readFileSync(join(dir, 'logs', 'learner.log'), 'utf8')
    assert.match(learnerLog, /reward model cold start: 2 steps on \d+ balanced steps/)
    const metrics = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { role: string; values: Record<string, number> })
    const learner = metrics.filter((l) => l.role === 'learner').map((l) => l.values)
    assert.ok(
      learner.some((v) => (v['reward/step_judged'] ?? 0) > 0),
      'the reward model judged steps',
    )
    assert.ok(
      learner.some((v) => v['reward/step_reward_used'] === 1),
      'step rewards reached the policy',
    )
    assert.ok(
      learner.some((v) => (v['reward_model/updates'] ?? 0) >= 1),
      'the reward model took a consistency update',
    )
    // The SFT checkpoint was evaluated by a `triad eval` process, the last one in the run.
    const evals = readdirSync(join(dir, 'eval'))
    assert.ok(evals.includes('step-000000.json'), evals.join(', '))
    const final = evals.find((f) => f.startsWith('final-'))
    assert.ok(final, evals.join(', '))
    const rows = JSON.parse(readFileSync(join(dir, 'eval', final), 'utf8')).rows as { checkpoint: string }[]
    assert.deepEqual(rows.map((r) => r.checkpoint).sort(), ['sft', 'step-2'])
    finished = dir
  })

  it("e2e - triad generate reads the run's LoRA checkpoint on its Hugging Face base (a run directory: its latest)", async () => {
    assert.ok(finished, 'the run above finished')
    const gen = startTriad(
      ['generate', finished, '--prompt', 'Hello', '--max-new-tokens', '3', '--json'],
      env,
    )
    const { code } = await gen.exited
    assert.equal(code, 0, gen.stderr())
    assert.match(
      gen.stderr(),
      /is a run directory: generating with its latest checkpoint \S+step-2 \(learner step 2\)/,
    )
    const out = JSON.parse(gen.stdout.at(-1)!) as { prompt_ids: number[]; ids: number[]; text: string }
    assert.deepEqual(out.prompt_ids, [9707]) // "Hello" in Qwen3's tokenizer
    assert.ok(out.ids.length >= 1 && out.ids.length <= 3)
    assert.equal(typeof out.text, 'string')
  })

  it("e2e - triad eval RUN_DIR evaluates the run's latest checkpoint (adapters on the base) with the run's settings", async () => {
    assert.ok(finished, 'the run above finished')
    const ev = startTriad(['eval', finished, '--json'], env)
    const { code } = await ev.exited
    assert.equal(code, 0, ev.stderr())
    const out = JSON.parse(ev.stdout.join('\n')) as {
      checkpoint: string
      k: number
      instances: { task: string; index: number }[]
      rows: { task: string; n: number }[]
    }
    assert.equal(out.checkpoint, join(finished, 'checkpoints', 'step-2'))
    // as the run's eval files: instances is every instance's result, each row's n their count
    assert.deepEqual(
      [out.k, out.instances.map((i) => `${i.task} ${i.index}`), out.rows.map((r) => r.n)],
      [1, ['calc 0'], [1]],
    )
    assert.deepEqual(
      out.rows.map((r) => r.task),
      ['calc'],
    )
  })

  it('e2e - resumed with a larger step budget, the run continues from its adapters and optimizer', async () => {
    assert.ok(finished, 'the run above finished')
    const file = tinyHfWithSteps(mkdtempSync(join(tmpdir(), 'triad-e2e-hf-r-')), 3)
    const run = startTriad(['run', file, '--in-process', '--resume', finished], env)
    const { code } = await run.exited
    assert.equal(code, 0, `${run.stdout.join('\n')}\n${run.stderr()}`)
    const learnerLog = readFileSync(join(finished, 'logs', 'learner.log'), 'utf8')
    assert.match(learnerLog, /resuming from \S+step-2 \(version 2\)/)
    assert.match(run.stdout.join('\n'), /^stopping \(3 steps done\)$/m)
    const step3 = join(finished, 'checkpoints', 'step-3')
    assert.ok(existsSync(join(step3, 'adapter_model.safetensors')))
    assert.equal(JSON.parse(readFileSync(join(step3, 'learner.json'), 'utf8')).version, 3)
  })
})
