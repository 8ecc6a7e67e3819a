/**
 * The reward function of the calc agent tasks (`tasks[].reward`): 1 when the last number of the
 * episode's last assistant message is the instance's answer, else 0. triad calls it when an agent
 * exits without posting a reward (`calc_agent.py` does so).
 */
import type { ChatMessage } from '../../protocols/index.ts'

/** The reward of one episode over its chat messages and its instance (`{"answer": number}`). */
export default function calcReward(messages: readonly ChatMessage[], instance: { answer?: unknown }): number {
  const last = [...messages].reverse().find((m) => m.role === 'assistant')
  const text = (last?.content as string | null | undefined) ?? ''
  const n = text.match(/-?\d+(\.\d+)?/g)?.at(-1)
  return n !== undefined && Number(n) === instance.answer ? 1 : 0
}
