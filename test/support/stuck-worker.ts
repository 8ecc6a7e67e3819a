/**
 * A `triad worker` process whose role never finishes stopping: `runWorker` with one extra role,
 * `stuck`, whose `stop` never resolves. Arguments: the NATS URL and the run id.
 */
import { workerRoles } from '../../bin/commands/worker.ts'
import { runWorker } from '../../bin/worker/run-worker.ts'

const [nats, run] = process.argv.slice(2)
if (!nats || !run) throw new Error('usage: stuck-worker.ts NATS_URL RUN')
await runWorker(
  'stuck',
  { nats, run, id: 'stuck' },
  { ...workerRoles, stuck: async () => ({ stop: () => new Promise<void>(() => {}) }) },
)
