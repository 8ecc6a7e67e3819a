import assert from 'node:assert/strict'
import os from 'node:os'
import { describe, it } from 'node:test'
import { findTorchPython } from '../../bin/bench/torch-twin.ts'
import { BackendName } from '../../gpu/index.ts'
import { runTriad } from '../support/triad-process.ts'

/** A Python path that does not exist: the twin is absent whatever the machine has. */
const NO_TORCH = '/nonexistent/triad-bench/python'

/** `triad bench <args>`: exits 0 and prints one JSON object. */
// biome-ignore lint/suspicious/noExplicitAny: the printed JSON, read field by field by the asserts
async function bench(args: string[]): Promise<Record<string, any>> {
  const r = await runTriad(['bench', ...args])
  assert.equal(r.code, 0, r.stderr)
  return JSON.parse(r.stdout)
}

const torch = findTorchPython()

describe('bin/commands/bench', () => {
  it('bench - rl-step --quick without torch: its own figures, torch null with the reason, null ratios', async () => {
    const out = await bench(['rl-step', '--quick', '--threads', '1', '--torch', NO_TORCH])
    assert.equal(out.bench, 'rl-step')
    assert.equal(out.threads.requested, 1)
    assert.equal(out.threads.backend, 1)
    for (const step of ['sftStep', 'rlStep', 'rlStepWithReference']) {
      assert.ok(out[step].wallMs > 0, step)
      assert.ok(out[step].cpuMs >= 0, step)
    }
    assert.ok(out.maxRssBytes > 0)
    assert.equal(out.torch, null)
    assert.match(out.torchReason, /nonexistent/)
    assert.deepEqual(out.speedupOverTorch.sftStep, { wall: null, cpu: null })
    assert.deepEqual(out.speedupOverTorch.rlStep, { wall: null, cpu: null })
  })

  it('bench - model --quick without torch: the existing fields, the GRPO-TCR step, torch null', async () => {
    const out = await bench(['model', '--quick', '--torch', NO_TORCH])
    assert.equal(out.bench, 'model')
    assert.equal(out.quick, true)
    assert.ok(out.threads.requested >= 1)
    assert.ok(out.matmul.gflops.wall > 0)
    assert.ok(out.training.tokensPerSecond.wall > 0)
    assert.ok(out.training.stepMsMedian.wall > 0)
    assert.ok(out.rlStep.stepMsMedian.wall > 0)
    assert.equal(out.rlStep.seqLen, out.training.seqLen + 1)
    // --quick: 1 warm-up step and 1 timed, for SFT and the GRPO-TCR step alike
    assert.deepEqual(
      [out.training.warmup, out.training.steps, out.rlStep.warmup, out.rlStep.steps],
      [1, 1, 1, 1],
    )
    assert.ok(out.generation.withCache.tokensPerSecond.wall > 0)
    assert.ok(out.memory.maxRssBytes > 0)
    assert.equal(out.torch, null)
    assert.match(out.torchReason, /nonexistent/)
    assert.deepEqual(out.speedupOverTorch.rlStep, { wall: null, cpu: null })
  })

  it('bench - rl-step --quick with torch: the twin runs at the same threads and gives torch / triad ratios', {
    skip: torch.python === undefined ? `no torch here: ${torch.reason}` : false,
  }, async () => {
    const out = await bench(['rl-step', '--quick', '--threads', '1', '--torch', torch.python!])
    assert.equal(out.torch.threads, 1)
    // the twin warms up and repeats as triad's side did (--quick: 1 warm-up step, 2 timed)
    assert.deepEqual([out.config.warmup, out.config.reps], [1, 2])
    for (const step of [out.torch.sftStep, out.torch.rlStep])
      assert.deepEqual([step.warmup, step.reps], [1, 2])
    assert.ok(out.torch.sftStep.wallMs > 0 && out.torch.rlStep.wallMs > 0)
    assert.ok(out.speedupOverTorch.sftStep.wall > 0 && out.speedupOverTorch.rlStep.cpu > 0)
    assert.equal(out.torchReason, undefined)
  })

  it('bench - a bad --threads or --backend exits 2 with one line naming the option', async () => {
    const cases: [string[], string][] = [
      [
        ['bench', 'rl-step', '--threads', '0'],
        `error: option '--threads <n>' argument '0' is invalid. Expected an integer in 1..${os.availableParallelism()}.`,
      ],
      [
        ['bench', 'model', '--threads', 'many'],
        `error: option '--threads <n>' argument 'many' is invalid. Expected an integer in 1..${os.availableParallelism()}.`,
      ],
      [
        ['bench', 'rl-step', '--threads', String(os.availableParallelism() + 1)],
        `error: option '--threads <n>' argument '${os.availableParallelism() + 1}' is invalid. Expected an integer in 1..${os.availableParallelism()}.`,
      ],
      [
        ['bench', 'hf-model', '--backend', 'tpu'],
        `error: option '--backend <name>' argument 'tpu' is invalid. Expected one of ${Object.values(BackendName).join(', ')}.`,
      ],
    ]
    for (const [args, line] of cases) {
      const r = await runTriad(args)
      assert.equal(r.code, 2, args.join(' '))
      assert.equal(r.stderr.split('\n')[0], line)
    }
  })
})
