/**
 * A `triad worker` process whose role takes until SIGUSR2 to start: `runWorker` with one extra
 * role, `slow`, that prints `{"event":"starting"}` on stdout and finishes starting when the process
 * gets SIGUSR2. A test signals it between the two to stop a worker mid-start. Arguments: the NATS
 * URL and the run id.
 */
import { workerRoles } from '../../bin/commands/worker.ts'
import { runWorker } from '../../bin/worker/run-worker.ts'

const [nats, run] = process.argv.slice(2)
if (!nats || !run) throw new Error('usage: slow-start-worker.ts NATS_URL RUN')
await runWorker(
  'slow',
  { nats, run, id: 'slow' },
  {
    ...workerRoles,
    slow: async () => {
      const go = new Promise<void>((resolve) => process.once('SIGUSR2', () => resolve()))
      process.stdout.write(`${JSON.stringify({ event: 'starting' })}\n`)
      await go
      return { stop: async () => {} }
    },
  },
)
