/**
 * Errors of the policy-model layer (`gpu/`). Each class sets `name`, keeps `cause` and carries the
 * data a caller needs to act on it.
 */

/** A requested backend cannot be loaded (package missing, no device, failed initialisation). */
export class BackendUnavailableError extends Error {
  override name = 'BackendUnavailableError'
  /** The backend that was asked for. */
  readonly backend: string
  /** Why each candidate that was tried failed, by backend name. */
  readonly attempts: Readonly<Record<string, string>>
  constructor(backend: string, attempts: Record<string, string>, options?: { cause?: unknown }) {
    const why = Object.entries(attempts)
      .map(([name, reason]) => `${name}: ${reason}`)
      .join('; ')
    super(`backend '${backend}' is unavailable (${why})`, { cause: options?.cause })
    this.backend = backend
    this.attempts = attempts
  }
}

/** A backend name that is not one of `BackendName`. */
export class UnknownBackendError extends Error {
  override name = 'UnknownBackendError'
  /** The name that was given. */
  readonly backend: string
  /** The valid names. */
  readonly known: readonly string[]
  constructor(backend: string, known: readonly string[]) {
    super(`unknown backend '${backend}'; known: ${known.join(', ')}`)
    this.backend = backend
    this.known = known
  }
}

/**
 * A setting that is out of range or inconsistent: of the model, sampler, optimizer or trainer, and
 * of the actors built on them (policy engines, the weight store, the env adapter, the reward
 * model). The one config error of the project: its message reads `field=value: why`.
 */
export class ConfigError extends Error {
  override name = 'ConfigError'
  /** The offending field, for example `width` or `top_p`. */
  readonly field: string
  /** The value that was given. */
  readonly value: unknown
  constructor(field: string, value: unknown, message: string, options?: { cause?: unknown }) {
    super(`${field}=${JSON.stringify(value)}: ${message}`, options)
    this.field = field
    this.value = value
  }
}

/** A tensor or array argument whose shape, dtype or contents do not fit the model. */
export class ShapeError extends Error {
  override name = 'ShapeError'
  /** The argument, for example `tokens`. */
  readonly argument: string
  /** The shape that was expected, in words. */
  readonly expected: string
  /** The shape that was given. */
  readonly actual: readonly number[]
  constructor(argument: string, expected: string, actual: readonly number[]) {
    super(`${argument}: expected ${expected}, got [${actual.join(', ')}]`)
    this.argument = argument
    this.expected = expected
    this.actual = actual
  }
}

/** Text that cannot be tokenized or rendered (for example a message with an unknown role). */
export class TemplateError extends Error {
  override name = 'TemplateError'
  /** Index of the offending message, when one is at fault. */
  readonly messageIndex: number | undefined
  constructor(message: string, options?: { messageIndex?: number; cause?: unknown }) {
    super(message, { cause: options?.cause })
    this.messageIndex = options?.messageIndex
  }
}

/** A checkpoint that cannot be written or read (missing file, bad header, wrong shapes). */
export class CheckpointError extends Error {
  override name = 'CheckpointError'
  /** The checkpoint directory or file. */
  readonly path: string
  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super(`${path}: ${message}`, { cause: options?.cause })
    this.path = path
  }
}

/** A name looked up in a read-only registry (estimator, aggregation mode, ...) that is not in it. */
export class UnknownVariantError extends Error {
  override name = 'UnknownVariantError'
  /** Which registry was searched, for example `advantage estimator`. */
  readonly registry: string
  /** The name asked for. */
  readonly requested: string
  /** Every valid name, sorted. */
  readonly valid: readonly string[]
  constructor(registry: string, requested: string, valid: readonly string[], options?: { cause?: unknown }) {
    super(`unknown ${registry} '${requested}'; valid names: ${valid.join(', ')}`, options)
    this.registry = registry
    this.requested = requested
    this.valid = valid
  }
}

/** A request to a continuous batcher that was closed before (or while) serving it. */
export class BatcherClosedError extends Error {
  override name = 'BatcherClosedError'
  constructor(options?: { cause?: unknown }) {
    super('the continuous batcher is closed', options)
  }
}

/** A model directory whose `architectures` names a model family triad does not implement. */
export class UnsupportedArchitectureError extends Error {
  override name = 'UnsupportedArchitectureError'
  /** The `config.json` that names it. */
  readonly path: string
  /** The architecture given (or `undefined` when none was). */
  readonly architecture: string | undefined
  /** The architectures triad loads. */
  readonly supported: readonly string[]
  constructor(path: string, architecture: string | undefined, supported: readonly string[]) {
    super(
      `${path}: architecture ${architecture === undefined ? '(none given)' : `'${architecture}'`} is not supported; supported: ${supported.join(', ')}`,
    )
    this.path = path
    this.architecture = architecture
    this.supported = supported
  }
}

/** A model whose parameters do not fit the backend's memory; raised before any weight is read. */
export class ModelTooLargeError extends Error {
  override name = 'ModelTooLargeError'
  /** The model directory. */
  readonly path: string
  /** Bytes the model needs on the backend (float32 parameters plus the output projection's transpose). */
  readonly bytes: number
  /** Bytes the backend can hold. */
  readonly limitBytes: number
  /** The backend whose limit it is. */
  readonly backend: string
  /** What the limit is, in words (`its heap (32-bit addresses)`, `the machine's available memory (...)`). */
  readonly limitSource: string | undefined
  constructor(
    path: string,
    bytes: number,
    limitBytes: number,
    backend: string,
    options: { limitSource?: string } = {},
  ) {
    const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`
    const what = options.limitSource ? `: ${options.limitSource}` : ''
    const todo =
      backend === 'wasm'
        ? 'use the native backend (no heap limit; npm run build:native) or a smaller model'
        : 'free memory (stop other processes), use a smaller model, or a machine with more memory'
    super(
      `${path}: the model needs ${gib(bytes)} as float32 (${bytes} bytes), more than the ${backend} backend's limit of ${gib(limitBytes)} (${limitBytes} bytes${what}); ${todo}`,
    )
    this.path = path
    this.bytes = bytes
    this.limitBytes = limitBytes
    this.backend = backend
    this.limitSource = options.limitSource
  }
}

/**
 * A thread count for the native engine's pool that is not a positive integer or exceeds the
 * machine's cores (`os.availableParallelism()`); raised before any backend is loaded.
 */
export class ThreadCountError extends Error {
  override name = 'ThreadCountError'
  /** The value given, as given (a number, or the text of `TRIAD_THREADS`). */
  readonly asked: unknown
  /** Cores of this machine (`os.availableParallelism()`). */
  readonly cores: number
  /** Where it was given: `threads` (a setting) or `TRIAD_THREADS` (the environment variable). */
  readonly setting: string
  constructor(setting: string, asked: unknown, cores: number, options?: { cause?: unknown }) {
    const n = typeof asked === 'string' && asked.trim() !== '' ? Number(asked) : asked
    const why =
      typeof n === 'number' && Number.isInteger(n) && n > cores
        ? `more than the ${cores} cores of this machine`
        : 'not a positive integer'
    super(
      `${setting}=${JSON.stringify(asked)}: ${why}; give 1 to ${cores}, or leave it out (auto) for all ${cores}`,
      { cause: options?.cause },
    )
    this.asked = asked
    this.cores = cores
    this.setting = setting
  }
}

/** A weights file with NaN or infinite values in a tensor; raised while loading, before a model is made. */
export class NonFiniteWeightsError extends CheckpointError {
  override name = 'NonFiniteWeightsError'
  /** The tensor's name as stored in the file. */
  readonly tensor: string
  /** How many of its values are NaN or infinite. */
  readonly count: number
  /** Index (flat, row-major) of the first of them. */
  readonly firstIndex: number
  /** The first of them (`NaN`, `Infinity` or `-Infinity`). */
  readonly firstValue: number
  constructor(file: string, tensor: string, count: number, firstIndex: number, firstValue: number) {
    super(
      file,
      `${tensor} has ${count} non-finite value${count === 1 ? '' : 's'} (first at index ${firstIndex}: ${firstValue}); the weights are corrupt: download or export the model again`,
    )
    this.tensor = tensor
    this.count = count
    this.firstIndex = firstIndex
    this.firstValue = firstValue
  }
}

/**
 * A NaN or infinite value where a model computes: the logits of a generation step, the loss or the
 * gradient norm of a training step. Raised at once (the weights are not updated with it).
 */
export class NonFiniteError extends Error {
  override name = 'NonFiniteError'
  /** What was not finite: `logits`, `loss` or `gradient norm`. */
  readonly quantity: string
  /** Where, in words: `generation step 3 of sequence 0`, `SFT step 12`, `RL step 5`. */
  readonly where: string
  /** The step (generated-token index from 0 for logits; optimizer step from 1 for training). */
  readonly step: number
  /** The value that was read (the sampled token's logprob for logits). */
  readonly value: number
  constructor(
    quantity: string,
    where: string,
    step: number,
    value: number,
    todo: string,
    options?: { cause?: unknown },
  ) {
    super(`non-finite ${quantity} (${value}) at ${where}; ${todo}`, { cause: options?.cause })
    this.quantity = quantity
    this.where = where
    this.step = step
    this.value = value
  }
}

/**
 * One tensor backend that failed to load or activate: its addon is missing or not built, no CUDA
 * device is visible, or tfjs refused to initialise it. `chooseBackend` skips it (its message is the
 * reason printed), or, when it was forced, raises BackendUnavailableError with it as the cause.
 */
export class BackendActivationError extends Error {
  override name = 'BackendActivationError'
  /** The backend that failed: `native`, `cuda`, `wasm`, ... */
  readonly backend: string
  constructor(backend: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.backend = backend
  }
}

/**
 * A gradient `tapeGradients` cannot compute: no variables, a value that is not a scalar or that no
 * recorded op leads to from the variables, or an op on the path without a gradient (or whose
 * gradient has another dtype or shape than its input).
 */
export class GradientError extends Error {
  override name = 'GradientError'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
  }
}
