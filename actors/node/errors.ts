/**
 * A role's start that was waiting on another role (the rollout waiting for the learner's tokenizer
 * or first weights) and was aborted: the run is stopping, for example because that role failed.
 */
export class StartAbortedError extends Error {
  override name = 'StartAbortedError'
  constructor(
    /** The role whose start was aborted: `rollout`. */
    readonly role: string,
    /** What it was waiting for. */
    readonly waitingFor: string,
  ) {
    super(`the ${role} role was stopped while it waited for ${waitingFor}`)
  }
}

/**
 * A row of an SFT dataset (`sft.datasets`) that is not an OpenAI chat conversation, or a dataset
 * file that cannot be read. The message is one line naming the file, the row (1-based; for JSONL
 * its line) and the field. Nothing is trained when a row is bad.
 */
export class SftDatasetError extends Error {
  override name = 'SftDatasetError'
  constructor(
    /** The dataset file. */
    readonly file: string,
    /** 1-based row (JSONL: line) number; 0 when the file as a whole is at fault. */
    readonly row: number,
    /** The field at fault (`messages[2].role`); empty when the row or file as a whole is. */
    readonly field: string,
    /** What is wrong. */
    readonly reason: string,
    cause?: unknown,
  ) {
    super(`sft dataset ${file}${row ? ` row ${row}` : ''}${field ? `: ${field}` : ''}: ${reason}`, { cause })
  }
}

/**
 * A cold start (SFT before RL) with nothing to train on: every expert episode ended in
 * `task_error`, or the recipe asks for no expert episodes (`sft.expertTrajectoriesPerTask` 0 or
 * `sft.experts` false) and its `sft.datasets` have no row. Nothing is trained.
 */
export class NoSftDataError extends Error {
  override name = 'NoSftDataError'
  constructor(message: string) {
    super(message)
  }
}

/**
 * The run's tokenizer, which the learner publishes before its cold start, did not appear within
 * the wait (the learner is not running, or is slow to start).
 */
export class TokenizerTimeoutError extends Error {
  override name = 'TokenizerTimeoutError'
  constructor(
    /** The run id. */
    readonly run: string,
    /** How long it waited, ms. */
    readonly timeoutMs: number,
  ) {
    super(`run ${run}: no tokenizer published within ${timeoutMs} ms (is the learner running?)`)
  }
}

/**
 * A node config (`node-config.json`, `parseNodeConfig`) that is not one: a field of the wrong type,
 * a missing or unknown field. The message is one line naming the file and every bad field.
 */
export class NodeConfigError extends Error {
  override name = 'NodeConfigError'
  constructor(
    /** The file the config came from. */
    readonly file: string,
    /** Each bad field (`rl.lr`, `tasks[0].weight`; `(root)` for the whole value) and what is wrong with it. */
    readonly issues: readonly { path: string; message: string }[],
  ) {
    super(`${file} is not a triad node config: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`)
  }
}
