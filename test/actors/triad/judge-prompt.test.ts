import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  BAD_VERDICT_TOKEN,
  episodeJudgeSteps,
  GOOD_VERDICT_TOKEN,
  JudgePromptTooLongError,
  judgeSystem,
  renderJudgePrompt,
  verdictOf,
} from '../../../actors/triad/index.ts'
import { Tokenizer } from '../../../gpu/index.ts'
import { ErrorCode, type JudgeStep } from '../../../protocols/index.ts'

const tok = new Tokenizer()
const step: JudgeStep = {
  task: 'calc',
  history: [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'make 7' },
    { role: 'assistant', content: 'first' },
    { role: 'tool', content: 'r1', tool_call_id: 'c0' },
    { role: 'assistant', content: 'second' },
    { role: 'tool', content: 'r2', tool_call_id: 'c1' },
  ],
  step: { role: 'assistant', content: 'third' },
}

describe('actors/triad/judge-prompt', () => {
  it('verdict - + is +1, - is -1, any other token is unparseable (0)', () => {
    assert.equal(GOOD_VERDICT_TOKEN, tok.encode('+')[0])
    assert.equal(BAD_VERDICT_TOKEN, tok.encode('-')[0])
    assert.equal(verdictOf(GOOD_VERDICT_TOKEN), 1)
    assert.equal(verdictOf(BAD_VERDICT_TOKEN), -1)
    assert.equal(verdictOf(tok.encode('y')[0]!), 0)
    assert.equal(verdictOf(tok.imEndId), 0)
  })

  it('judge prompt - judge system line, the history, the step, then the judge turn header', () => {
    const text = tok.decode(renderJudgePrompt(tok, step, 1000))
    assert.equal(
      text,
      `<|im_start|>system\n${judgeSystem('calc')}<|im_end|>\n` +
        '<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nmake 7<|im_end|>\n' +
        '<|im_start|>assistant\nfirst<|im_end|>\n<|im_start|>tool\nr1<|im_end|>\n' +
        '<|im_start|>assistant\nsecond<|im_end|>\n<|im_start|>tool\nr2<|im_end|>\n' +
        '<|im_start|>assistant\nthird<|im_end|>\n<|im_start|>assistant\n',
    )
    const short = tok.decode(renderJudgePrompt(tok, step, 1000, 0, { system: (t) => `j ${t}` }))
    assert.ok(short.startsWith('<|im_start|>system\nj calc<|im_end|>\n'))
  })

  it('judge prompt - the tool messages that answered the step follow it, before the judge turn', () => {
    const withResult: JudgeStep = {
      ...step,
      result: [{ role: 'tool', content: 'error: r3', tool_call_id: 'c2' }],
    }
    const text = tok.decode(renderJudgePrompt(tok, withResult, 1000))
    assert.ok(
      text.endsWith(
        '<|im_start|>assistant\nthird<|im_end|>\n<|im_start|>tool\nerror: r3<|im_end|>\n<|im_start|>assistant\n',
      ),
      text,
    )
    assert.equal(
      renderJudgePrompt(tok, withResult, 1000).length,
      renderJudgePrompt(tok, step, 1000).length + 17,
    ) // <|im_start|> 'tool\nerror: r3' <|im_end|> '\n'
  })

  it('episode judge steps - each assistant message with the messages before it and the tool messages after it', () => {
    const messages = [
      ...step.history,
      step.step,
      { role: 'tool' as const, content: 'r3', tool_call_id: 'c2' },
    ]
    const steps = episodeJudgeSteps('calc', messages)
    assert.deepEqual(
      steps.map((s) => [s.step.content, s.history.length, s.result?.map((r) => r.content)]),
      [
        ['first', 2, ['r1']],
        ['second', 4, ['r2']],
        ['third', 6, ['r3']],
      ],
    )
    // A last step the environment never answered (a cut episode) has an empty result.
    assert.deepEqual(episodeJudgeSteps('calc', [...step.history, step.step]).at(-1)?.result, [])
    // A turn without a tool call is answered by a user message: that is its result.
    const note = { role: 'user' as const, content: 'error: no tool call; call one of: add' }
    const noCall = episodeJudgeSteps('calc', [
      ...step.history,
      step.step,
      note,
      { role: 'assistant', content: 'x' },
    ])
    assert.deepEqual(noCall.at(-2)?.result, [note])
    assert.equal(noCall.at(-1)?.history.at(-1), note)
  })

  it('judge prompt - too long: the oldest turns after the task statement go first, then a typed error', () => {
    const full = renderJudgePrompt(tok, step, 1000).length
    // Room for everything but the first assistant turn.
    const firstTurn = 1 + 10 + 5 + 1 + 1 // <|im_start|>, "assistant\n", "first", <|im_end|>, "\n"
    const cut = tok.decode(renderJudgePrompt(tok, step, full - 1))
    assert.ok(!cut.includes('first') && cut.includes('r1') && cut.includes('make 7') && cut.includes('third'))
    assert.equal(renderJudgePrompt(tok, step, full - 1).length, full - firstTurn)
    assert.throws(
      () => renderJudgePrompt(tok, step, 20, 3),
      (err: unknown) =>
        err instanceof JudgePromptTooLongError &&
        err.code === ErrorCode.InvalidMessage &&
        err.stepIndex === 3 &&
        /judge prompt of step 3 has \d+ tokens; the reward model's context holds 20/.test(err.message),
    )
  })
})
