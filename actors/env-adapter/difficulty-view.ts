import type { EnvDifficulty, PayloadOf } from '../../protocols/index.ts'

/**
 * The rollout side's copy of the task levels: keeps the newest `env.difficulty` it has seen (by
 * `revision`; publishes are at-most-once and may arrive late) and answers the level to start an
 * instance at.
 */
export class DifficultyView {
  private current: PayloadOf<typeof EnvDifficulty> | undefined

  /** Takes an `env.difficulty` payload; returns false (and keeps the old one) when it is older. */
  update(d: PayloadOf<typeof EnvDifficulty>): boolean {
    if (this.current && d.revision < this.current.revision) return false
    this.current = d
    return true
  }

  /** Revision held, or -1 before any. */
  get revision(): number {
    return this.current?.revision ?? -1
  }

  /**
   * Level to start instance `index` of `task` at: its own level, else the task's default; undefined
   * when the adapter does not know the task (start it at the task's own default).
   */
  levelFor(task: string, index: number): number | undefined {
    const t = this.current?.tasks[task]
    if (!t) return undefined
    return t.levels[String(index)] ?? t.default
  }
}
