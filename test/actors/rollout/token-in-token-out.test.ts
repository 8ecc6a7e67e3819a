import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { InProcessTransport } from '../../../actors/index.ts'
import { EnvClient, PolicyRouter, runEpisode } from '../../../actors/testing.ts'
import { createRng, loadJinjaChatFormat, Tokenizer } from '../../../gpu/index.ts'
import {
  type ChatMessage,
  EnvCancel,
  EnvCancelled,
  EnvInteract,
  EnvInteracted,
  EnvStart,
  EnvStarted,
  MessageRegistry,
  PolicyGenerate,
  PolicyGenerated,
  SessionStatus,
  Subjects,
  type ToolSchema,
} from '../../../protocols/index.ts'
import { QWEN3_TOKENIZER_DIR } from '../../support/qwen3-tokenizer.ts'

const qwen = loadJinjaChatFormat(QWEN3_TOKENIZER_DIR)

const tools: ToolSchema[] = ['add', 'mul'].map((name) => ({
  type: 'function',
  function: {
    name,
    description: `${name} two numbers`,
    parameters: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
  },
}))

// What the engine samples each turn, in Qwen3's own output format: reasoning, then tool calls (two in
// the first turn), spaced as the model writes them, not as the template would re-render them.
const sampledTexts = [
  '<think>\nI need 2+3 and 1+1.\n</think>\n\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>\n' +
    '<tool_call>\n{"name":"add","arguments":{"a":1,"b":1}}\n</tool_call><|im_end|>',
  '<think>\nNow 5*2.\n</think>\n\n<tool_call>\n{"name": "mul", "arguments": {"a": 5, "b": 2}}\n</tool_call><|im_end|>',
  '<think>\nDone.\n</think>\n\nThe product is 10.<|im_end|>',
]

/** What the environment answers the last step with (the episode is done: the policy never reads it). */
const FINAL_RESULT: ChatMessage = { role: 'user', content: 'correct' }

/**
 * A scripted policy engine and environment on an in-process transport. The engine is scripted (a
 * model that writes Qwen3's format needs real weights, which cannot be had here); the tokenizer,
 * template, agent loop and transport are the real ones.
 */
async function episodeWorld() {
  const transport = new InProcessTransport()
  const run = 'tito'
  const worker = `triad.${run}.env.worker.w`
  const prompts: Int32Array[] = []
  const sampled: Int32Array[] = []
  const logprobs: Float32Array[] = []
  const interactions: ChatMessage[] = []
  await transport.serve(Subjects.envStart(run), {
    accepts: new MessageRegistry([EnvStart]),
    handler: () =>
      EnvStarted.make({
        session: 's',
        worker,
        messages: [
          { role: 'system', content: 'You are a calculator.' },
          { role: 'user', content: 'What are 2+3 and 1+1?' },
        ],
        tools,
      }),
  })
  const replies: ChatMessage[][] = [
    [
      { role: 'tool', content: '5', tool_call_id: 'call_0' },
      { role: 'tool', content: '2', tool_call_id: 'call_1' },
      { role: 'user', content: 'Now multiply the two results.' },
    ],
    [{ role: 'tool', content: '10', tool_call_id: 'call_0' }],
  ]
  await transport.serve(worker, {
    accepts: new MessageRegistry([EnvInteract, EnvCancel]),
    handler: (m) => {
      if (m.type === EnvCancel.type) return EnvCancelled.make({ session: 's' })
      interactions.push((m.payload as { message: ChatMessage }).message)
      const turn = interactions.length - 1
      const done = turn >= replies.length
      return EnvInteracted.make({
        done,
        reward: done ? 1 : 0,
        status: done ? SessionStatus.Completed : SessionStatus.Running,
        messages: done ? [FINAL_RESULT] : replies[turn]!,
        metrics: {},
      })
    },
  })
  await transport.serve(Subjects.policyFresh(run), {
    accepts: new MessageRegistry([PolicyGenerate]),
    handler: (m) => {
      const request = m.payload as { prompt: Int32Array; stop_tokens: number[]; max_new_tokens: number }
      assert.deepEqual(request.stop_tokens, [151645])
      prompts.push(request.prompt)
      const whole = Int32Array.from(qwen.encode(sampledTexts[sampled.length]!))
      const tokens = whole.slice(0, request.max_new_tokens)
      const lp = Float32Array.from(tokens, (_, i) => -0.01 * (sampled.length * 100 + i + 1))
      sampled.push(tokens)
      logprobs.push(lp)
      return PolicyGenerated.make({
        tokens,
        logprobs: lp,
        version: 3,
        finish_reason: tokens.length < whole.length ? 'length' : 'stop',
        engine: 'e',
        stale: false,
      })
    },
  })
  const deps = {
    env: new EnvClient(transport, run),
    policy: new PolicyRouter(transport, run, 0, createRng(1)),
    tokenizer: new Tokenizer(),
    chat: qwen,
  }
  return { deps, prompts, sampled, logprobs, interactions }
}

describe('actors/rollout/agent-loop - token-in-token-out with the real Qwen3 tokenizer and template', () => {
  it('agent-loop - over three turns the learner trains on exactly the sampled ids, the engine saw exactly the trajectory, and a re-rendering would differ', async () => {
    const world = await episodeWorld()
    const episode = await runEpisode(
      world.deps,
      { task: 'calc' },
      { maxTurns: 5, maxNewTokens: 256, contextLength: 4096, temperature: 1, top_p: 1 },
      7,
    )
    const t = episode.trajectory
    assert.equal(t.status, SessionStatus.Completed)
    assert.equal(t.turns, 3)
    assert.equal(world.sampled.length, 3)

    // Only the sampled ids are in the loss, in order, with the engine's logprobs and version.
    const allSampled = world.sampled.flatMap((s) => [...s])
    const learned = [...t.tokens].filter((_, i) => t.loss_mask[i] === 1)
    assert.deepEqual(learned, allSampled)
    assert.deepEqual(
      [...t.logprobs].filter((_, i) => t.loss_mask[i] === 1),
      world.logprobs.flatMap((l) => [...l]),
    )
    assert.equal(
      [...t.versions].every((v, i) => (t.loss_mask[i] === 1 ? v === 3 : v === -1)),
      true,
    )
    // Each turn's sampled ids sit right after that turn's prompt: the engine saw exactly the
    // trajectory so far, and the sampled ids are where the learner finds them.
    assert.deepEqual(
      [...t.turn_starts],
      world.prompts.map((p) => p.length),
    )
    world.prompts.forEach((prompt, k) => {
      assert.deepEqual([...t.tokens.slice(0, prompt.length)], [...prompt], `prompt of turn ${k}`)
      assert.deepEqual(
        [...t.tokens.slice(prompt.length, prompt.length + world.sampled[k]!.length)],
        [...world.sampled[k]!],
      )
    })
    // What lies between turns is the template's own writing of the tool results and the user turn.
    const between = qwen.decode(
      t.tokens.slice(t.turn_starts[0]! + world.sampled[0]!.length, t.turn_starts[1]!),
    )
    assert.equal(
      between,
      '\n<|im_start|>user\n<tool_response>\n5\n</tool_response>\n<tool_response>\n2\n</tool_response><|im_end|>\n' +
        '<|im_start|>user\nNow multiply the two results.<|im_end|>\n<|im_start|>assistant\n',
    )
    assert.equal(
      qwen.decode(t.tokens),
      `${qwen.text(episode.messages.slice(0, 2), tools, false)}${expectedRest()}`,
    )

    // The messages end with the last step's result, which the reward model judges that step with;
    // the tokens (above) end with the last turn, as the policy never reads it.
    assert.deepEqual(
      episode.messages.map((m) => m.role),
      ['system', 'user', 'assistant', 'tool', 'tool', 'user', 'assistant', 'tool', 'assistant', 'user'],
    )
    assert.deepEqual(episode.messages.at(-1), FINAL_RESULT)
    assert.equal(qwen.decode(t.tokens).endsWith('The product is 10.<|im_end|>\n'), true)

    // The parsed turns went to the environment: reasoning out of the content, both calls of turn 1.
    assert.deepEqual(world.interactions[0], {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_0', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } },
        { id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":1}' } },
      ],
    })
    assert.deepEqual(world.interactions[2], { role: 'assistant', content: 'The product is 10.' })

    // Re-rendering the whole history the template's way gives other tokens (the first turn's
    // reasoning is dropped after the later user query; calls are re-spaced): what a loop that
    // re-renders would have trained on instead of what was sampled.
    const rerendered = qwen.text(episode.messages, tools, false)
    assert.equal(rerendered.includes('I need 2+3 and 1+1.'), false)
    assert.equal(qwen.decode(t.tokens).includes('I need 2+3 and 1+1.'), true)
    assert.notDeepEqual([...qwen.encode(rerendered)], [...t.tokens])
  })
})

describe('actors/rollout/agent-loop - a Qwen3 turn cut by the token budget', () => {
  it('agent-loop - the <|im_end|> that closes a cut turn is context (mask 0), the cut ids are learned, and the cut call is invalid', async () => {
    const world = await episodeWorld()
    const episode = await runEpisode(
      world.deps,
      { task: 'calc' },
      { maxTurns: 1, maxNewTokens: 12, contextLength: 4096, temperature: 1, top_p: 1 },
      7,
    )
    const t = episode.trajectory
    assert.equal(t.status, SessionStatus.TurnLimit)
    assert.equal(world.sampled[0]!.length, 12)
    const start = t.turn_starts[0]!
    assert.deepEqual([...t.tokens.slice(start, start + 12)], [...world.sampled[0]!])
    // Then the close and the tool results, all context.
    assert.deepEqual([...t.tokens.slice(start + 12, start + 14)], [151645, ...qwen.encode('\n')])
    assert.equal(
      t.loss_mask.slice(start + 12).every((m) => m === 0),
      true,
    )
    assert.equal(
      t.loss_mask.reduce((a, b) => a + b, 0),
      12,
    )
    // The cut turn (reasoning not closed) went to the environment as plain content.
    assert.deepEqual(world.interactions[0], { role: 'assistant', content: qwen.decode(world.sampled[0]!) })
  })
})

/** The trajectory after the first two messages, written by hand: turns as sampled, results as the template writes them. */
function expectedRest(): string {
  return (
    `<|im_start|>assistant\n${sampledTexts[0]}\n` +
    '<|im_start|>user\n<tool_response>\n5\n</tool_response>\n<tool_response>\n2\n</tool_response><|im_end|>\n' +
    '<|im_start|>user\nNow multiply the two results.<|im_end|>\n' +
    `<|im_start|>assistant\n${sampledTexts[1]}\n` +
    '<|im_start|>user\n<tool_response>\n10\n</tool_response><|im_end|>\n' +
    `<|im_start|>assistant\n${sampledTexts[2]}\n`
  )
}
