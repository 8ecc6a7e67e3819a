import { z } from 'zod'

/**
 * OpenAI chat-completions shapes, as on the wire (field names exactly OpenAI's), shared by the
 * environment API, the policy engines and the OpenAI-compatible client.
 */

/** One tool call inside an assistant message. `arguments` is a JSON string, as in OpenAI's API. */
export const ToolCallSchema = z.object({
  id: z.string(),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
})
export type ToolCall = z.infer<typeof ToolCallSchema>

/** A chat message: system, user, assistant (optionally with `tool_calls`) or tool (with `tool_call_id`). */
export const ChatMessageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    tool_calls: z.array(ToolCallSchema).optional(),
  }),
  z.object({
    role: z.literal('tool'),
    content: z.string(),
    tool_call_id: z.string(),
    name: z.string().optional(),
  }),
])
export type ChatMessage = z.infer<typeof ChatMessageSchema>
export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>
export type ToolMessage = Extract<ChatMessage, { role: 'tool' }>
export type UserMessage = Extract<ChatMessage, { role: 'user' }>

/** An OpenAI tool schema: `{type: "function", function: {name, description, parameters}}`. */
export const ToolSchemaSchema = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string(),
    description: z.string(),
    /** A JSON Schema object describing the arguments. */
    parameters: z.record(z.string(), z.unknown()),
  }),
})
export type ToolSchema = z.infer<typeof ToolSchemaSchema>
