import { ConfigError, decodeSafetensors, encodeSafetensors, type NamedTensor } from '../../gpu/index.ts'
import {
  checkToken,
  type PayloadOf,
  Subjects,
  WeightsPublished,
  weightsBucket,
} from '../../protocols/index.ts'
import type { Transport } from '../runtime/index.ts'
import type { BlobStore } from './blob-store.ts'
import { WeightsFormatError, WeightsNotFoundError } from './errors.ts'
import { openBlobStore } from './open-blob-store.ts'

/** The payload of a `weights.published` announcement. */
export type WeightsAnnouncement = PayloadOf<typeof WeightsPublished>

/** Weights by parameter name, float32, row-major (see `paramShapes` in gpu/). */
export type WeightMap = Record<string, Float32Array>

/** Options of `WeightStore.open`. */
export interface WeightStoreOptions {
  /** Versions kept per model; older ones are deleted after each `put` (default 3). */
  keep?: number
}

/** Object name of a version: `<model>-v<version>`. */
export const weightsKey = (model: string, version: number) => `${checkToken(model, 'model name')}-v${version}`

/**
 * Weights of a run in the blob store bucket `weightsBucket(run)` of the transport's medium: the
 * JetStream object store over NATS (docs/design.md#messaging-and-wire-protocol: payloads over
 * `max_payload` go to the object store and the version is announced on
 * `Subjects.weights(run, model)`), memory in process.
 *
 * Each version is one safetensors object (`gpu/safetensors.ts`; tensors 1-D unless shapes are
 * given; metadata `model` and `version`) named `weightsKey(model, version)`. Only the newest
 * `keep` versions of each model stay; an engine that asks for a pruned one gets
 * `WeightsNotFoundError` and waits for the next announcement.
 */
export class WeightStore {
  private constructor(
    private readonly os: BlobStore,
    /** The bucket name. */
    readonly bucket: string,
    /** The run the bucket belongs to. */
    readonly run: string,
    private readonly keep: number,
  ) {}

  /**
   * Opens (creating when absent) the run's weights bucket on the transport's medium.
   * @throws ConfigError on a bad `keep`; the JetStream error when JetStream is off.
   */
  static async open(
    transport: Transport,
    run: string,
    options: WeightStoreOptions = {},
  ): Promise<WeightStore> {
    const keep = options.keep ?? 3
    if (!Number.isInteger(keep) || keep < 1) throw new ConfigError('keep', keep, 'must be a positive integer')
    const bucket = weightsBucket(checkToken(run, 'run id'))
    const os = await openBlobStore(transport, bucket)
    return new WeightStore(os, bucket, run, keep)
  }

  /**
   * Writes version `version` of `model`, prunes old versions, and returns the announcement (not
   * sent; see `publish`).
   * @param shapes optional shape per name (default 1-D `[length]`).
   * @throws ConfigError on a bad model name or version.
   */
  async put(
    model: string,
    version: number,
    weights: Readonly<WeightMap>,
    shapes: Readonly<Record<string, number[]>> = {},
  ): Promise<WeightsAnnouncement> {
    if (!Number.isInteger(version) || version < 0)
      throw new ConfigError('version', version, 'must be a non-negative integer')
    let key: string
    try {
      key = weightsKey(model, version)
    } catch (err) {
      throw new ConfigError('model', model, (err as Error).message)
    }
    const tensors: Record<string, NamedTensor> = {}
    for (const [name, data] of Object.entries(weights))
      tensors[name] = { shape: shapes[name] ?? [data.length], data }
    const bytes = encodeSafetensors(tensors, { model, version: String(version) })
    await this.os.put(key, bytes, `${model} weights, version ${version}`)
    await this.prune(model)
    return { model, version, bucket: this.bucket, key, bytes: bytes.length }
  }

  /**
   * `put`, then announces the version with `weights.published` on `Subjects.weights(run, model)`.
   * @returns the announcement sent.
   */
  async publish(
    transport: Transport,
    model: string,
    version: number,
    weights: Readonly<WeightMap>,
    shapes?: Readonly<Record<string, number[]>>,
  ): Promise<WeightsAnnouncement> {
    const announcement = await this.put(model, version, weights, shapes)
    transport.publish(Subjects.weights(this.run, model), WeightsPublished.make(announcement))
    await transport.flush()
    return announcement
  }

  /**
   * Reads the weights an announcement names.
   * @throws WeightsNotFoundError when the object is gone; WeightsFormatError when it is not
   *   float safetensors.
   */
  async load(announcement: Pick<WeightsAnnouncement, 'key'>): Promise<WeightMap> {
    const { key } = announcement
    const bytes = await this.os.get(key)
    if (!bytes) throw new WeightsNotFoundError(this.bucket, key)
    let decoded: ReturnType<typeof decodeSafetensors>
    try {
      decoded = decodeSafetensors(bytes, `${this.bucket}/${key}`)
    } catch (err) {
      throw new WeightsFormatError(this.bucket, key, (err as Error).message, { cause: err })
    }
    const out: WeightMap = {}
    for (const [name, t] of Object.entries(decoded.tensors)) out[name] = t.data
    return out
  }

  /** Stored versions of `model`, ascending. */
  async versions(model: string): Promise<number[]> {
    const prefix = `${model}-v`
    const infos = await this.os.list()
    return infos
      .filter((i) => i.name.startsWith(prefix) && /^\d+$/.test(i.name.slice(prefix.length)))
      .map((i) => Number(i.name.slice(prefix.length)))
      .sort((a, b) => a - b)
  }

  /** The announcement of the newest stored version of `model` that `accept` takes, if any. */
  async latest(
    model: string,
    accept: (version: number) => boolean = () => true,
  ): Promise<WeightsAnnouncement | undefined> {
    const versions = (await this.versions(model)).filter(accept)
    const version = versions[versions.length - 1]
    if (version === undefined) return undefined
    const key = weightsKey(model, version)
    const info = await this.os.info(key)
    return { model, version, bucket: this.bucket, key, bytes: info?.size ?? 0 }
  }

  /** Deletes all but the newest `keep` versions of `model`. */
  private async prune(model: string): Promise<void> {
    const versions = await this.versions(model)
    for (const v of versions.slice(0, Math.max(0, versions.length - this.keep)))
      await this.os.delete(weightsKey(model, v))
  }
}
