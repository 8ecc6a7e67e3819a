import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { createRoleLogger, infoLines } from '../../../actors/index.ts'
import { childLogLine, closeRoleLogger, LogLevels } from '../../../actors/testing.ts'

describe('actors/runtime/role-logger', () => {
  it('createRoleLogger - one pino JSON line per message with level, time, pid, hostname, role, id, run', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'triad-log-')), 'logs', 'learner.log')
    const logger = createRoleLogger({ role: 'learner', id: 'learner', run: 'r-1' }, file)
    const before = Date.now()
    infoLines(logger)('SFT: 2 steps')
    logger.warn('slow')
    logger.error({ err: new Error('boom') }, 'failed')
    logger.debug('not at the default level')
    closeRoleLogger(logger)
    const lines = readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg, l.role, l.id, l.run, l.pid, l.hostname]),
      [
        [LogLevels.info, 'SFT: 2 steps', 'learner', 'learner', 'r-1', process.pid, hostname()],
        [LogLevels.warn, 'slow', 'learner', 'learner', 'r-1', process.pid, hostname()],
        [LogLevels.error, 'failed', 'learner', 'learner', 'r-1', process.pid, hostname()],
      ],
    )
    assert.ok((lines[0]!.time as number) >= before)
    assert.equal((lines[2]!.err as { message: string }).message, 'boom')
  })

  it('childLogLine - a pino line stays as it is; text and protocol lines become pino lines of the role', () => {
    const pinoLine = '{"level":40,"time":1,"msg":"x"}'
    assert.equal(childLogLine(pinoLine, { role: 'learner', pid: 7 }, 'stderr'), pinoLine)
    const who = { role: 'rollout', pid: 7 }
    assert.deepEqual(JSON.parse(childLogLine('triad: tensor backend wasm', who, 'stderr', 5)), {
      level: LogLevels.warn,
      time: 5,
      pid: 7,
      hostname: hostname(),
      role: 'rollout',
      stream: 'stderr',
      msg: 'triad: tensor backend wasm',
    })
    assert.deepEqual(JSON.parse(childLogLine('{"event":"ready","run":"r"}', who, 'stdout', 5)), {
      event: 'ready',
      run: 'r',
      level: LogLevels.info,
      time: 5,
      pid: 7,
      hostname: hostname(),
      role: 'rollout',
      stream: 'stdout',
      msg: 'ready',
    })
    assert.equal(
      JSON.parse(childLogLine('{"event":"failed","error":"e"}', who, 'stdout', 5)).level,
      LogLevels.error,
    )
    assert.equal(JSON.parse(childLogLine('{not json', who, 'stdout', 5)).msg, '{not json')
  })
})
