import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { RunCodeRequestSchema } from '../../protocols/index.ts'
import { DEFAULT_LIMITS } from '../../sandboxes/index.ts'
import { checkRequest, LANGUAGES, languageCommands, SandboxRequestError } from '../../sandboxes/testing.ts'
import { utf8BodyText } from '../../sandboxes/unicode-text.ts'

const req = (o: Record<string, unknown>) => RunCodeRequestSchema.parse({ code: '', language: 'python', ...o })
const refusal = (re: RegExp) => (e: unknown) =>
  e instanceof SandboxRequestError && e.statusCode === 422 && re.test(e.message)

describe('sandboxes/request-checks', () => {
  it('a language whose minimum is over the sandbox limit is refused even at -1', () => {
    const limits = { ...DEFAULT_LIMITS, memoryMB: 128 }
    assert.throws(
      () => checkRequest(req({ language: 'rust' }), limits),
      refusal(/^memory_limit_MB: rust needs at least 256 MiB; this sandbox allows 128$/),
    )
    checkRequest(req({ language: 'java' }), limits)
    checkRequest(req({ language: 'java', memory_limit_MB: 128 }), limits)
  })

  it('a language whose toolchain is not installed is refused naming the language and its packages', () => {
    assert.throws(
      () => checkRequest(req({ language: 'java' }), DEFAULT_LIMITS, new Set(['python'])),
      refusal(
        /^language: java is not installed in this sandbox \(missing: .*\); install Debian's default-jdk-headless/,
      ),
    )
    checkRequest(req({ language: 'python' }), DEFAULT_LIMITS, new Set(['python']))
  })

  it('-1, 0 and asks at or above the minimum pass; one below is refused', () => {
    for (const mb of [-1, 0, 16, 17, 4096]) checkRequest(req({ memory_limit_MB: mb }), DEFAULT_LIMITS)
    assert.throws(
      () => checkRequest(req({ memory_limit_MB: 15 }), DEFAULT_LIMITS),
      refusal(/15 is below the minimum of 16 MiB/),
    )
  })

  it('canonical base64 (any padding), empty and null contents pass', () => {
    checkRequest(
      req({ files: { a: '', b: null, c: 'aGk=', d: 'aA==', e: 'aGVsbG8h', f: '+/+/' } }),
      DEFAULT_LIMITS,
    )
  })

  it('a file may replace the source file but not sit under it', () => {
    checkRequest(req({ language: 'java', files: { 'Main.java': '' } }), DEFAULT_LIMITS)
    assert.throws(
      () => checkRequest(req({ language: 'java', files: { 'Main.java/x': '' } }), DEFAULT_LIMITS),
      refusal(/needs 'Main\.java \(the source file\)' as a folder/),
    )
  })

  it('names are measured in UTF-8 bytes: 128 two-byte characters are 256 bytes, over 255', () => {
    assert.throws(
      () => checkRequest(req({ files: { ['é'.repeat(128)]: '' } }), DEFAULT_LIMITS),
      refusal(/has a name of 256 bytes, over the limit of 255/),
    )
    checkRequest(req({ files: { ['é'.repeat(127)]: '' } }), DEFAULT_LIMITS)
  })
})

describe('sandboxes/languages', () => {
  it('placeholders are filled per job: heap half the memory, cores rounded up, the work dir', () => {
    const java = languageCommands('java', { memoryMB: 300, cpus: 1.5, workdir: '/w' })
    assert.ok(
      java.run.includes('-Xmx150m') && java.run.includes('-XX:ActiveProcessorCount=2'),
      java.run.join(' '),
    )
    assert.ok(java.compile?.includes('-J-Xmx150m'))
    const go = languageCommands('go', { memoryMB: 512, cpus: 0.5, workdir: '/w' })
    assert.deepEqual(go.env, {
      OMP_NUM_THREADS: '1',
      OPENBLAS_NUM_THREADS: '1',
      GOCACHE: '/w/.cache/go-build',
      GOPATH: '/w/.go',
      GOMAXPROCS: '1',
      GOFLAGS: '-p=1',
    })
    assert.deepEqual(languageCommands('python', { memoryMB: 64, cpus: 1, workdir: '/w' }), {
      source: 'main.py',
      compile: null,
      run: ['/usr/bin/python3', 'main.py'],
      env: { OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1' },
    })
  })

  it('no command is left with a placeholder', () => {
    for (const language of Object.keys(LANGUAGES) as (keyof typeof LANGUAGES)[]) {
      const c = languageCommands(language, { memoryMB: 512, cpus: 1, workdir: '/work' })
      const text = [...(c.compile ?? []), ...c.run, ...Object.values(c.env)].join(' ')
      assert.doesNotMatch(text, /\{(heap_mb|cpus|workdir)\}/, language)
    }
  })
})

describe('sandboxes/unicode-text', () => {
  it('a lone surrogate in code, stdin, a files name or value, or a fetch_files path is refused naming the field', () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ code: 'x\ud800' }, /^code: is not valid UTF-8 text: a lone surrogate U\+D800 at character 1 /],
      [{ code: '\udfff' }, /^code: is not valid UTF-8 text: a lone surrogate U\+DFFF at character 0 /],
      [{ stdin: 'ab\udc80' }, /^stdin: is not valid UTF-8 text: a lone surrogate U\+DC80 at character 2 /],
      [{ files: { 'a\ud800': 'eA==' } }, /^files: the name 'a\ufffd' is not valid UTF-8 text/],
      [{ files: { a: '\ud800' } }, /^files: the value of 'a' is not valid UTF-8 text/],
      [{ fetch_files: ['\ud800'] }, /^fetch_files: the path '\ufffd' is not valid UTF-8 text/],
    ]
    for (const [o, re] of cases) assert.throws(() => checkRequest(req(o), DEFAULT_LIMITS), refusal(re))
    // a pair is one character, not a lone surrogate
    checkRequest(
      req({ code: 'print("\ud83d\ude00")', stdin: '\u00e9', files: { '\u00e9.txt': null } }),
      DEFAULT_LIMITS,
    )
  })

  it('a body byte that is not UTF-8 becomes the escape of a lone low surrogate; UTF-8 is kept as is', () => {
    assert.equal(utf8BodyText(Buffer.from('{"a": "\u00e9\ud83d\ude00"}')), '{"a": "\u00e9\ud83d\ude00"}')
    const bad = Buffer.concat([
      Buffer.from('"a'),
      Buffer.from([0xff, 0xc3, 0x41, 0xe2, 0x82]),
      Buffer.from('b"'),
    ])
    assert.equal(utf8BodyText(bad), '"a\\udcff\\udcc3A\\udce2\\udc82b"')
    assert.equal(JSON.parse(utf8BodyText(bad)), 'a\udcff\udcc3A\udce2\udc82b')
    // overlong and surrogate encodings are not UTF-8 either
    assert.equal(
      utf8BodyText(Buffer.from([0xc0, 0x80, 0xed, 0xa0, 0x80])),
      '\\udcc0\\udc80\\udced\\udca0\\udc80',
    )
  })
})
