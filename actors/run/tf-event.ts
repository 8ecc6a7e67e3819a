/**
 * The protobuf encoding of TensorFlow's `Event` (`tensorflow/core/util/event.proto`) for the two
 * kinds an event file of scalars needs: the `file_version` header and a `Summary` of scalar
 * `simple_value`s (`tensorflow/core/framework/summary.proto`). Field numbers:
 * `Event.wall_time = 1` (double, seconds since the Unix epoch), `Event.step = 2` (int64),
 * `Event.file_version = 3` (string), `Event.summary = 5`; `Summary.value = 1`;
 * `Summary.Value.tag = 1` (string), `Summary.Value.simple_value = 2` (float32).
 */

/** The `file_version` of the first event of every event file TensorBoard reads. */
export const TF_EVENT_FILE_VERSION = 'brain.Event:2'

/** Protobuf wire types (protobuf encoding guide). */
const Wire = { varint: 0, fixed64: 1, bytes: 2, fixed32: 5 } as const

const key = (field: number, wire: number) => (field << 3) | wire

/** Unsigned LEB128 varint of a non-negative safe integer. */
function varint(n: number): number[] {
  const out: number[] = []
  let v = BigInt(n)
  do {
    let byte = Number(v & 0x7fn)
    v >>= 7n
    if (v > 0n) byte |= 0x80
    out.push(byte)
  } while (v > 0n)
  return out
}

function bytesField(field: number, data: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([key(field, Wire.bytes), ...varint(data.length)]), data])
}

function doubleField(field: number, value: number): Buffer {
  const b = Buffer.alloc(9)
  b[0] = key(field, Wire.fixed64)
  b.writeDoubleLE(value, 1)
  return b
}

function floatField(field: number, value: number): Buffer {
  const b = Buffer.alloc(5)
  b[0] = key(field, Wire.fixed32)
  b.writeFloatLE(value, 1)
  return b
}

/** The head of every event: `wall_time` (s) and `step` (omitted at 0, proto3's default). */
function eventHead(wallTimeS: number, step: number): Buffer[] {
  const parts = [doubleField(1, wallTimeS)]
  if (step !== 0) parts.push(Buffer.from([key(2, Wire.varint), ...varint(step)]))
  return parts
}

/** The `Event{wall_time, file_version: "brain.Event:2"}` that opens an event file. */
export function fileVersionEvent(wallTimeS: number): Buffer {
  return Buffer.concat([...eventHead(wallTimeS, 0), bytesField(3, Buffer.from(TF_EVENT_FILE_VERSION))])
}

/**
 * An `Event{wall_time, step, summary}` whose summary holds one `simple_value` per entry of
 * `scalars` (tag, value); values are stored as float32, as TensorBoard's scalars are.
 * @param wallTimeS seconds since the Unix epoch.
 * @param step a non-negative integer.
 */
export function scalarsEvent(
  wallTimeS: number,
  step: number,
  scalars: readonly (readonly [string, number])[],
): Buffer {
  if (!Number.isSafeInteger(step) || step < 0)
    throw new RangeError(`event step must be a non-negative integer, got ${step}`)
  const values = scalars.map(([tag, value]) =>
    bytesField(1, Buffer.concat([bytesField(1, Buffer.from(tag, 'utf8')), floatField(2, value)])),
  )
  return Buffer.concat([...eventHead(wallTimeS, step), bytesField(5, Buffer.concat(values))])
}
