import type { PlayedEpisode } from './play.ts'

/**
 * A trajectory as text for people: one block per message, tool calls as `name(arguments)`, and a
 * closing line with status, reward and the step labels.
 */
export function formatTrajectory(t: PlayedEpisode): string {
  const lines = [`# ${t.task} difficulty ${t.difficulty} ${t.split} seed ${t.seed}`]
  for (const m of t.messages) {
    if (m.role === 'assistant') {
      if (m.content) lines.push(`assistant: ${m.content}`)
      for (const c of m.tool_calls ?? []) lines.push(`  -> ${c.function.name}(${c.function.arguments})`)
    } else if (m.role === 'tool') lines.push(`  <- ${m.content.replace(/\n/g, '\n     ')}`)
    else lines.push(`${m.role}: ${m.content}`)
  }
  lines.push(
    `= ${t.status}, reward ${t.reward}, turns ${t.metrics.turns ?? t.stepGood.length}, step_good ${t.stepGood.join('')}, ${t.metrics.context_bytes ?? '?'} bytes`,
  )
  return lines.join('\n')
}
