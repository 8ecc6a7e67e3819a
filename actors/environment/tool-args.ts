import { Ajv, type ValidateFunction } from 'ajv'
import type { ToolCall, ToolSchema } from '../../protocols/index.ts'

/**
 * Checking one tool call against a task's tools: the tool exists, its `arguments` string is JSON
 * of an object, and that object passes the tool's JSON schema (ajv 8, all errors collected).
 */

/** Why a tool call was refused. Closed set. */
export const ToolCallProblem = {
  UnknownTool: 'unknown_tool',
  NotJson: 'arguments_not_json',
  SchemaMismatch: 'arguments_break_schema',
} as const
export type ToolCallProblem = (typeof ToolCallProblem)[keyof typeof ToolCallProblem]

/** A checked tool call: either its parsed arguments or the problem, with a message for the policy. */
export type CheckedToolCall =
  | { ok: true; name: string; args: Record<string, unknown> }
  | { ok: false; problem: ToolCallProblem; message: string }

/** The compiled argument validators of one task's tools. Build once per task. */
export class ToolArgsValidator {
  private readonly validators = new Map<string, ValidateFunction>()

  /** @throws Error when a tool's `parameters` is not a valid JSON schema (a task bug). */
  constructor(tools: readonly ToolSchema[]) {
    const ajv = new Ajv({ allErrors: true, strict: false })
    for (const t of tools) this.validators.set(t.function.name, ajv.compile(t.function.parameters))
  }

  /** The names of the tools, in schema order. */
  names(): string[] {
    return [...this.validators.keys()]
  }

  /** Checks one tool call. Never throws. */
  check(call: ToolCall): CheckedToolCall {
    const name = call.function.name
    const validate = this.validators.get(name)
    if (!validate)
      return {
        ok: false,
        problem: ToolCallProblem.UnknownTool,
        message: `error: unknown tool '${name}'; tools: ${this.names().join(', ')}`,
      }
    let args: unknown
    try {
      args = JSON.parse(call.function.arguments === '' ? '{}' : call.function.arguments)
    } catch (e) {
      return {
        ok: false,
        problem: ToolCallProblem.NotJson,
        message: `error: arguments of '${name}' are not JSON: ${(e as Error).message}`,
      }
    }
    if (!validate(args)) {
      const issues = (validate.errors ?? [])
        .map((e) => `${e.instancePath || 'arguments'} ${e.message ?? 'is invalid'}`)
        .join('; ')
      return {
        ok: false,
        problem: ToolCallProblem.SchemaMismatch,
        message: `error: bad arguments for '${name}': ${issues}`,
      }
    }
    return { ok: true, name, args: args as Record<string, unknown> }
  }
}

const cache = new WeakMap<readonly ToolSchema[], ToolArgsValidator>()

/** The validator of a tool list, compiled once per list (ajv compilation costs milliseconds). */
export function validatorFor(tools: readonly ToolSchema[]): ToolArgsValidator {
  let v = cache.get(tools)
  if (!v) {
    v = new ToolArgsValidator(tools)
    cache.set(tools, v)
  }
  return v
}
