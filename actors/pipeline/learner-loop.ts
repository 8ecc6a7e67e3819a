import { appendFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { MetricValues, Millis, TrajectoryGroupPayload } from '../../protocols/index.ts'
import { sleep, systemClock } from '../runtime/index.ts'
import { pruneCheckpoints } from './checkpoint-pruning.ts'
import { type AckRecord, type PipelineCheckpoint, readAckRecords } from './checkpoint-records.ts'
import { CheckpointPruneError } from './errors.ts'
import { appendTrajectoryLog } from './trajectory-log.ts'
import type { TakenGroup, TrajectoryConsumer } from './trajectory-stream.ts'

export {
  type AckRecord,
  type PipelineCheckpoint,
  readAckRecords,
  readLatestCheckpoint,
} from './checkpoint-records.ts'

/**
 * What the learner loop needs from the learner: one update on whole groups, its weights, and
 * checkpoints. The step math lives in `gpu/` (GRPO-TCR); this loop only moves data.
 */
export interface LearnerCore {
  /** Learner steps taken so far (the version of the current weights). */
  readonly version: number
  /** One RL update on these groups; returns its metrics. Increments `version`. */
  step(groups: readonly TrajectoryGroupPayload[]): Promise<MetricValues>
  /** The current weights by parameter name. */
  weights(): Promise<Record<string, Float32Array>>
  /** Writes a checkpoint of the current weights (and optimizer state) into `dir`. */
  saveCheckpoint(dir: string): Promise<void>
}

/** Settings of the learner loop (AgentRL's asynchronous pipeline, or the synchronous baseline). */
export interface LearnerLoopSettings {
  /** Least groups per step: the learner waits until this many are ready. */
  minBatchGroups: number
  /** Most groups per step (everything ready up to this). */
  maxBatchGroups: number
  /** Groups whose oldest token is more than this many versions behind are dropped and counted. */
  stalenessBound: number
  /** Checkpoint (and acknowledge the groups used since the last one) every this many steps. */
  checkpointEvery: number
  /** Directory of the learner's checkpoints (`step-<n>/` plus `latest.json`). */
  checkpointDir: string
  /** How long one wait for groups may last before the loop reports and waits again, ms. */
  waitMs: Millis
  /** Longest trajectory the learner takes, tokens (the model's context + 1); longer groups are dropped. */
  maxTokens?: number
  /**
   * Step checkpoints to keep: after each checkpoint the older ones are deleted (`pruneCheckpoints`:
   * never `sft/`, the latest, nor the one the ack audit needs); absent: every one is kept.
   */
  keepCheckpoints?: number
  /**
   * Also checkpoint every this many steps (the run's `evaluation.every`), so each periodic
   * evaluation finds the checkpoint of its step; absent or 0: only `checkpointEvery`.
   */
  evaluationEvery?: number
  /**
   * While `run` runs, the groups it holds unacknowledged are kept alive (`keepAlive`) every this
   * many ms, so that a stream ack wait shorter than a step does not hand them out again while
   * this learner still holds them; absent: only once per `runOnce`. A third of the ack wait.
   */
  keepAliveMs?: Millis
  /**
   * The run's trajectory log (`trajectory-log.ts`): every group a step trains on is appended with
   * the step's version once its update is in the weights; absent: none is kept.
   */
  trajectoryLog?: string
}

/** Whether every sample of a group is well formed and at most `maxTokens` long. */
function fits(group: TrajectoryGroupPayload, maxTokens = Number.POSITIVE_INFINITY): boolean {
  return group.samples.every((s) => {
    const n = s.tokens.length
    return (
      n >= 2 &&
      n <= maxTokens &&
      s.loss_mask.length === n &&
      s.logprobs.length === n &&
      s.versions.length === n
    )
  })
}

/** Oldest weight version among the generated tokens of a group (its staleness reference). */
export function oldestVersion(group: TrajectoryGroupPayload): number {
  let oldest = Number.POSITIVE_INFINITY
  for (const s of group.samples)
    for (let i = 0; i < s.versions.length; i++)
      if (s.loss_mask[i] && s.versions[i]! < oldest) oldest = s.versions[i]!
  return Number.isFinite(oldest) ? oldest : group.started_version
}

/**
 * The learner's loop: take every ready group once at least `minBatchGroups` are ready, drop those
 * staler than the bound, step, publish the new weights, and acknowledge the groups only after a
 * checkpoint holds the step that used them. A learner restarted from that checkpoint therefore
 * sees again exactly the groups whose effect it lost; groups acknowledged are never used twice
 * (a group redelivered because an ack was lost after its checkpoint is recognised by its stream
 * sequence and skipped).
 */
export class LearnerLoop {
  /** Groups taken and checked, waiting for the minimum to be reached. */
  private readonly ready: TakenGroup[] = []
  /** Groups used in steps since the last checkpoint (not yet acknowledged). */
  private held: TakenGroup[] = []
  /**
   * Steps taken (their update is in the weights) whose end did not finish: the weights publish
   * or the checkpoint due at that version failed (NATS restarting). The next `runOnce` finishes
   * them before it takes groups; see `finishStep`.
   */
  private unfinished = false
  /** Steps held since the last checkpoint. */
  private stepsSinceCheckpoint = 0
  private readonly skipSeqs: Set<number>
  /** Aborted by `stop`: a wait for groups ends at once. */
  private readonly halt = new AbortController()
  /** Counters since start. */
  readonly counts = {
    steps: 0,
    groups: 0,
    droppedStale: 0,
    duplicatesSkipped: 0,
    /** Groups dropped because a sample is malformed or longer than `maxTokens`. */
    invalid: 0,
    busyMs: 0,
    startedAt: performance.now(),
  }

  constructor(
    private readonly core: LearnerCore,
    private readonly consumer: TrajectoryConsumer,
    private readonly settings: LearnerLoopSettings,
    private readonly publishWeights: (
      version: number,
      weights: Record<string, Float32Array>,
    ) => Promise<void>,
    private readonly report: (values: MetricValues, version: number) => void,
    resumedFrom?: PipelineCheckpoint,
  ) {
    // Every group ever trained on, from the audit trail and the checkpoint being resumed: one
    // whose acknowledgement was lost comes back, and is skipped instead of trained on twice.
    const records = readAckRecords(settings.checkpointDir)
    this.skipSeqs = new Set([...(resumedFrom?.usedSeqs ?? []), ...records.flatMap((r) => r.used)])
    const keep = settings.keepCheckpoints
    if (keep !== undefined && !(Number.isInteger(keep) && keep >= 1))
      throw new CheckpointPruneError(settings.checkpointDir, keep)
    mkdirSync(settings.checkpointDir, { recursive: true })
    // `latest.json` is the commit point of a checkpoint: the groups it names are used. A learner
    // stopped between writing it and its audit line (a kill, a stop watchdog) left the audit
    // without them; the line is written now, before this learner's first checkpoint replaces
    // `latest.json`, so the audit trail never forgets a group that was trained on.
    if (resumedFrom && resumedFrom.usedSeqs.length > 0 && !recorded(records, resumedFrom))
      this.audit({ version: resumedFrom.version, used: resumedFrom.usedSeqs, dropped: [], duplicates: [] })
  }

  /** Takes ready groups and runs one step; returns false when no group came within `waitMs`. */
  async runOnce(): Promise<boolean> {
    // A step whose end failed is finished first: its checkpoint, if one was due, acknowledges the
    // groups it holds. Skipped, the held groups would grow past the consumer's ack-pending limit
    // (sized for `checkpointEvery` steps), the stream would hand out nothing more, and with no
    // step there would be no checkpoint to release them: the run would stall.
    if (this.unfinished) await this.finishStep()
    const want = this.settings.minBatchGroups - this.ready.length
    const taken = await this.consumer.take(
      Math.max(1, want),
      Math.max(1, this.settings.maxBatchGroups - this.ready.length),
      this.settings.waitMs,
      this.halt.signal,
    )
    // Stopped while waiting: no step starts. What was taken stays unacknowledged (the stream gives
    // it to the next learner after its ack deadline), like the groups in `ready`.
    if (this.halt.signal.aborted) return false
    this.consumer.keepAlive(this.held)
    this.consumer.keepAlive(this.ready)
    const use: TakenGroup[] = this.ready.splice(0)
    const discard: TakenGroup[] = []
    const duplicates: TakenGroup[] = []
    for (const t of taken) {
      // Handed out again while this learner still holds it (its ack wait passed during a long
      // step): the newest delivery replaces the one held; it is not used a second time.
      if (this.replaceHeld(t)) continue
      if (this.skipSeqs.has(t.seq)) {
        this.counts.duplicatesSkipped++
        duplicates.push(t)
      } else if (!fits(t.group, this.settings.maxTokens)) {
        this.counts.invalid++
        discard.push(t)
      } else if (this.core.version - oldestVersion(t.group) > this.settings.stalenessBound) {
        this.counts.droppedStale++
        discard.push(t)
      } else use.push(t)
    }
    if (discard.length || duplicates.length) {
      await this.consumer.ack([...discard, ...duplicates])
      this.audit({
        version: this.core.version,
        used: [],
        dropped: discard.map((t) => t.seq),
        duplicates: duplicates.map((t) => t.seq),
      })
    }
    // Fewer than the minimum ready (the wait timed out): keep them and wait for more.
    if (use.length < this.settings.minBatchGroups) {
      this.ready.push(...use)
      return false
    }
    const t0 = performance.now()
    const stalenessValues = use.map((t) => this.core.version - oldestVersion(t.group))
    // Once the update is in the weights (the version moved), the step is taken: its groups are
    // held (acknowledged with the next checkpoint) and it counts toward the budget before anything
    // that can fail, the end of `step` included (the reward model's weights publish). A publish
    // that fails on a NATS server that is restarting must not leave them unheld, to be handed out
    // again and trained twice. A step that failed before its update gives its groups back.
    const before = this.core.version
    const hold = () => {
      if (this.settings.trajectoryLog)
        appendTrajectoryLog(this.settings.trajectoryLog, use, this.core.version)
      this.held.push(...use)
      this.stepsSinceCheckpoint++
      this.unfinished = true
      this.counts.steps++
      this.counts.groups += use.length
    }
    let metrics: MetricValues
    try {
      metrics = await this.core.step(use.map((t) => t.group))
    } catch (err) {
      if (this.core.version > before) hold()
      else this.ready.unshift(...use)
      throw err
    }
    hold()
    const tPublish = performance.now()
    const publishMs = await this.finishStep(tPublish)
    this.counts.busyMs += performance.now() - t0
    const wall = performance.now() - this.counts.startedAt
    this.report(
      {
        ...metrics,
        'pipeline/groups_per_step': use.length,
        'pipeline/staleness_max': Math.max(...stalenessValues),
        'pipeline/staleness_mean': stalenessValues.reduce((a, b) => a + b, 0) / stalenessValues.length,
        'pipeline/dropped_stale': this.counts.droppedStale,
        'pipeline/duplicates_skipped': this.counts.duplicatesSkipped,
        'pipeline/learner_busy_frac': wall > 0 ? this.counts.busyMs / wall : 0,
        'pipeline/invalid_groups': this.consumer.invalid + this.counts.invalid,
        'time/learner_step_s': (performance.now() - t0) / 1000,
        'time/publish_weights_s': publishMs / 1000,
      },
      this.core.version,
    )
    return true
  }

  /**
   * The end of a step taken: publishes the current weights, then checkpoints when one is due (at
   * multiples of `checkpointEvery` or `evaluationEvery`, or once `checkpointEvery` steps are held
   * since the last checkpoint: a step whose end failed at a multiple is caught up on here).
   * @returns the milliseconds the weights publish took.
   */
  private async finishStep(tPublish = performance.now()): Promise<number> {
    const weights = await this.core.weights()
    await this.publishWeights(this.core.version, weights)
    const publishMs = performance.now() - tPublish
    const v = this.core.version
    const every = this.settings.checkpointEvery
    const evalEvery = this.settings.evaluationEvery ?? 0
    if (v % every === 0 || this.stepsSinceCheckpoint >= every || (evalEvery > 0 && v % evalEvery === 0))
      await this.checkpoint()
    this.unfinished = false
    return publishMs
  }

  /** Replaces the held (or ready) group of `t`'s sequence by `t`; false when none is held. */
  private replaceHeld(t: TakenGroup): boolean {
    for (const list of [this.held, this.ready]) {
      const i = list.findIndex((h) => h.seq === t.seq)
      if (i >= 0) {
        list[i] = t
        return true
      }
    }
    return false
  }

  /**
   * Saves a checkpoint, points `latest.json` at it (the commit: the groups it names are used),
   * records them in the audit trail, acknowledges them on the stream, then deletes the step
   * checkpoints past `keepCheckpoints`. Interrupted anywhere, a resume neither trains a group
   * twice nor loses one: before `latest.json` the groups are not acknowledged (they come again
   * and are trained again from the older checkpoint); after it, the resumed learner skips them
   * and writes a missing audit line (see the constructor).
   */
  async checkpoint(): Promise<PipelineCheckpoint> {
    const dir = join(this.settings.checkpointDir, `step-${this.core.version}`)
    await this.core.saveCheckpoint(dir)
    const record: PipelineCheckpoint = {
      version: this.core.version,
      usedSeqs: this.held.map((t) => t.seq),
      dir,
    }
    const tmp = join(this.settings.checkpointDir, 'latest.json.tmp')
    writeFileSync(tmp, JSON.stringify(record))
    renameSync(tmp, join(this.settings.checkpointDir, 'latest.json'))
    // The audit line before the acknowledgement, which waits on the server.
    this.audit({ version: this.core.version, used: record.usedSeqs, dropped: [], duplicates: [] })
    for (const t of this.held) this.skipSeqs.add(t.seq)
    const acked = this.held
    this.held = []
    this.stepsSinceCheckpoint = 0
    await this.consumer.ack(acked)
    if (this.settings.keepCheckpoints !== undefined)
      pruneCheckpoints(this.settings.checkpointDir, this.settings.keepCheckpoints)
    return record
  }

  private audit(record: AckRecord): void {
    appendFileSync(join(this.settings.checkpointDir, 'acks.jsonl'), `${JSON.stringify(record)}\n`)
  }

  /**
   * Runs steps until `stop()` or `maxSteps` steps, then checkpoints the steps taken since the last
   * checkpoint (a budget or a stop that does not fall on `checkpointEvery`), so the last step is
   * always saved. A failure to reach the stream (NATS down, reconnecting) is reported and retried
   * after a pause; the held groups stay held.
   */
  async run(maxSteps = Number.POSITIVE_INFINITY, onError: (err: unknown) => void = () => {}): Promise<void> {
    let pause = 250
    const every = this.settings.keepAliveMs
    const keepAlive = every
      ? setInterval(() => {
          this.consumer.keepAlive(this.held)
          this.consumer.keepAlive(this.ready)
        }, every)
      : undefined
    try {
      while (!this.halt.signal.aborted && this.counts.steps < maxSteps) {
        try {
          await this.runOnce()
          pause = 250
        } catch (err) {
          if (!isTransient(err)) throw err
          onError(err)
          await sleep(systemClock, pause, this.halt.signal)
          pause = Math.min(pause * 2, 5_000)
        }
      }
      if (this.held.length > 0) await this.checkpoint()
    } finally {
      clearInterval(keepAlive)
    }
  }

  /**
   * Ends `run` after the step in progress (a step is never cut short); a wait for groups ends at
   * once. `run` then checkpoints the steps since the last checkpoint.
   */
  stop(): void {
    this.halt.abort()
  }
}

/** Whether the audit trail has the line of `checkpoint`: its version with exactly its used groups. */
function recorded(records: readonly AckRecord[], checkpoint: PipelineCheckpoint): boolean {
  const want = [...checkpoint.usedSeqs].sort((a, b) => a - b).join(',')
  return records.some(
    (r) => r.version === checkpoint.version && [...r.used].sort((a, b) => a - b).join(',') === want,
  )
}

/** Errors of an unreachable or restarting NATS server, which a retry can outlive. */
function isTransient(err: unknown): boolean {
  const text = `${(err as Error)?.name ?? ''} ${(err as Error)?.message ?? ''} ${String((err as Error)?.cause ?? '')}`
  return /timeout|disconnect|connection|closed|no responders|heartbeat|consumer deleted|not found|503|reconnect/i.test(
    text,
  )
}
