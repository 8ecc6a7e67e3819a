import type { Command } from 'commander'
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
