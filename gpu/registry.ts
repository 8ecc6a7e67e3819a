import { UnknownVariantError } from './errors.ts'

/**
 * Builds a read-only registry of named variants (estimators, aggregation modes). The record is
 * frozen once; look names up with `lookupVariant`, which lists the valid names when one is missing.
 */
export function defineRegistry<T>(entries: Record<string, T>): Readonly<Record<string, T>> {
  return Object.freeze({ ...entries })
}

/**
 * Returns `registry[name]`.
 * @param kind what the registry holds, for the error message (`aggregation mode`).
 * @throws UnknownVariantError listing every valid name when `name` is not registered.
 */
export function lookupVariant<T>(kind: string, registry: Readonly<Record<string, T>>, name: string): T {
  if (!Object.hasOwn(registry, name)) throw new UnknownVariantError(kind, name, Object.keys(registry).sort())
  return registry[name] as T
}
