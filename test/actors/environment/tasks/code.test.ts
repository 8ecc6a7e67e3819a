import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import {
  createCodeTask,
  defaultCodeRunner,
  generateCode,
  TaskRng,
} from '../../../../actors/environment/index.ts'
import { mean, playMany } from './expert-check.ts'

// The local sandbox backend (bubblewrap where installed) runs the programs.
const runner = await defaultCodeRunner({})
const code = createCodeTask({ runner, runTimeoutS: 2 })
after(() => runner.close())

describe('actors/environment/tasks/code - programs run in the sandbox', () => {
  it('code - each family has the answer its program prints', async () => {
    for (let d = 1; d <= 4; d++) {
      const rng = new TaskRng(d)
      for (let k = 0; k < 2; k++) {
        const i = generateCode(rng, d)
        const r = await runner.runPython(i.program, 10)
        assert.equal(r.status, 'Success', JSON.stringify(r))
        assert.equal(r.run_result?.stdout?.trim(), i.answer, i.question)
      }
    }
  })

  it('code - an exception and a time-out come back as tool errors', async () => {
    const ep = await code.open(generateCode(new TaskRng(1), 1))
    assert.deepEqual(await ep.call('run_python', { code: '1/0' }), {
      content: 'error: ZeroDivisionError: division by zero',
      good: false,
      toolError: true,
    })
    assert.deepEqual(await ep.call('run_python', { code: 'while True: pass' }), {
      content: 'error: time limit exceeded',
      good: false,
      toolError: true,
    })
  })

  it('code - expert succeeds at its configured rate (0.75 +- 0.15 over 60 seeds) and recovers from typos', async () => {
    const ts = [
      ...(await playMany(code, 1, 0.3, 0.75, 20)),
      ...(await playMany(code, 2, 0.3, 0.75, 20)),
      ...(await playMany(code, 4, 0.3, 0.75, 20)),
    ]
    const rate = mean(ts.map((t) => t.reward))
    assert.ok(Math.abs(rate - 0.75) <= 0.15, `success rate ${rate}`)
    const recovered = ts.filter((t) => t.reward === 1 && t.stepGood.includes(0))
    assert.ok(recovered.length >= 5, `recovered ${recovered.length}`)
    assert.ok(ts.every((t) => t.status === 'completed'))
  })
})
