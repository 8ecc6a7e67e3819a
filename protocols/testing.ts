/**
 * What the tests of `protocols/` import besides its index: names no other folder needs. Only
 * `test/` imports this file (the layering test holds the other folders to `index.ts`).
 */
export { envMessages } from './env-api.ts'
export { DecodeError, UnknownTypeError, VersionMismatchError } from './errors.ts'
export { defineMessage } from './message.ts'
export { METRIC_CATALOG } from './metric-catalog.ts'
export { sandboxMessages } from './sandbox-api.ts'
