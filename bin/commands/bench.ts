import os from 'node:os'
import { type Command, InvalidArgumentError } from 'commander'
import { BackendName } from '../../gpu/index.ts'
import { UsageError } from '../errors.ts'
import { integerOption } from '../numeric-option.ts'

/**
 * Benchmarks: each prints one JSON object on stdout. A benchmark module exports
 * `run(options): Promise<unknown>`; the result is printed as JSON.
 */
type BenchModule = { run(options: Record<string, unknown>): Promise<unknown> }

/** Registered benchmarks, by name. Loaded lazily so `triad --help` stays fast. */
const benches: Readonly<Record<string, () => Promise<BenchModule>>> = {
  messaging: () => import('../bench/messaging.ts'),
  pipeline: () => import('../bench/pipeline.ts'),
  model: () => import('../bench/model.ts'),
  'rl-step': () => import('../bench/rl-step.ts'),
  'sft-threads': () => import('../bench/sft-threads.ts'),
  sandbox: () => import('../bench/sandbox.ts'),
  engine: () => import('../bench/engine.ts'),
  tokenizer: () => import('../bench/tokenizer.ts'),
  'chat-format': () => import('../bench/chat-format.ts'),
  env: () => import('../bench/env.ts'),
  'reward-judge': () => import('../bench/reward-judge.ts'),
  'hf-model': () => import('../bench/hf-model.ts'),
}

/**
 * Parser of `--backend <name>`: one of `BackendName`'s values.
 * @throws InvalidArgumentError "Expected one of native, ...". for anything else.
 */
export function backendOption(value: string): string {
  const names: string[] = Object.values(BackendName)
  if (!names.includes(value)) throw new InvalidArgumentError(`Expected one of ${names.join(', ')}.`)
  return value
}

/** Adds `triad bench <name>` to the program. */
export function registerBench(program: Command): void {
  program
    .command('bench')
    .description(`run a benchmark and print JSON (${Object.keys(benches).join(', ') || 'none yet'})`)
    .argument('<name>', 'benchmark name')
    .option('--nats <url>', 'NATS server URL (benchmarks that need one start their own otherwise)')
    .option('--quick', 'a short run, for smoke tests')
    .option(
      '--soak <seconds>',
      'sandbox: also run 128 callers for this many seconds per backend',
      integerOption({ min: 1 }),
    )
    .option('--seconds <n>', 'pipeline: seconds measured per mode (default 90)', integerOption({ min: 1 }))
    .option(
      '--backend <name>',
      'model, rl-step, hf-model: force the tensor backend (default: TRIAD_BACKEND, else the best)',
      backendOption,
    )
    .option(
      '--threads <n>',
      'model, rl-step, hf-model: threads of the kernels and of the PyTorch twin (default: every core)',
      integerOption({ min: 1, max: os.availableParallelism() }),
    )
    .option(
      '--torch <python>',
      'model, rl-step, hf-model: a Python with torch for the twin (default: .venv-bench/bin/python, else python3)',
    )
    .option(
      '--skip-full-training',
      'hf-model: skip the full-parameter training step (at full size it can hold more memory than the machine has)',
    )
    .allowUnknownOption(false)
    .action(async (name: string, options: Record<string, unknown>) => {
      const load = benches[name]
      if (!load)
        throw new UsageError(
          `unknown benchmark '${name}'; known: ${Object.keys(benches).join(', ') || 'none'}`,
        )
      const result = await (await load()).run(options)
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
    })
}
