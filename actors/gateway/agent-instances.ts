import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { AgentInstancesError } from './errors.ts'

/** An instance as an agent program receives it (`TRIAD_INSTANCE`): always with its `index`. */
export type AgentInstance = { index: number } & Record<string, unknown>

/**
 * The instances of an agent task: a count `n` (instance `i` is `{"index": i, "seed": seed}`), or
 * a JSONL file, row `i` being instance `i` (a JSON object; `index` is set to `i`). An instance is
 * drawn from the group's seed: `|seed| mod n`.
 */
export class AgentInstances {
  private constructor(
    private readonly rows: readonly Record<string, unknown>[] | undefined,
    /** Number of instances. */
    readonly size: number,
  ) {}

  /**
   * Reads the task's instances.
   * @throws AgentInstancesError for a count that is not a positive integer, a file that cannot be
   *   read, is empty, or has a row that is not a JSON object (naming its line).
   */
  static of(instances: number | string): AgentInstances {
    if (typeof instances === 'number') {
      if (!(Number.isInteger(instances) && instances > 0))
        throw new AgentInstancesError(String(instances), 'a count of instances must be a positive integer')
      return new AgentInstances(undefined, instances)
    }
    let text: string
    try {
      text = readFileSync(resolve(instances), 'utf8')
    } catch (err) {
      throw new AgentInstancesError(instances, `cannot be read: ${(err as Error).message}`)
    }
    const rows: Record<string, unknown>[] = []
    for (const [i, line] of text.split('\n').entries()) {
      if (line.trim() === '') continue
      let row: unknown
      try {
        row = JSON.parse(line)
      } catch {
        throw new AgentInstancesError(instances, `line ${i + 1} is not JSON: ${line.slice(0, 80)}`)
      }
      if (typeof row !== 'object' || row === null || Array.isArray(row))
        throw new AgentInstancesError(instances, `line ${i + 1} is not a JSON object`)
      rows.push(row as Record<string, unknown>)
    }
    if (rows.length === 0) throw new AgentInstancesError(instances, 'has no instance (no JSON line)')
    return new AgentInstances(rows, rows.length)
  }

  /** The instance a group with `seed` plays. */
  pick(seed: number): AgentInstance {
    const index = Math.abs(seed) % this.size
    return this.rows ? { ...this.rows[index]!, index } : { index, seed }
  }
}
