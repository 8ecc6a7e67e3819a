import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import Docker from 'dockerode'
import type { FastifyInstance } from 'fastify'
import {
  buildSandboxImage,
  buildSandboxServer,
  DEFAULT_LIMITS,
  DockerBackend,
  LocalBackend,
  type SandboxBackend,
} from '../../sandboxes/index.ts'
import { post } from './hostile-suite.ts'

/**
 * Bad requests on both backends (real docker, real bubblewrap): each is 422 naming the field (415
 * for a body that is not JSON) and is answered before a slot is touched: the backend has run no job
 * and replaced no sandbox afterwards, and the next good request runs.
 */

const docker = new Docker()
const noDocker = await docker.ping().then(
  () => false,
  (e: Error) =>
    `no Docker daemon answers on /var/run/docker.sock (${e.message}); start it with .ci/services.sh`,
)
const IMAGE = 'triad-sandbox:languages-test'
const limits = { ...DEFAULT_LIMITS, concurrency: 1, memoryMB: 512 }
const b64 = (s: string) => Buffer.from(s).toString('base64')

for (const kind of ['docker', 'local'] as const) {
  describe(`sandboxes/bad requests on the ${kind} backend`, {
    skip: kind === 'docker' ? noDocker : false,
  }, () => {
    let app: FastifyInstance
    let backend: SandboxBackend
    let url = ''

    before(async () => {
      if (kind === 'docker') {
        await buildSandboxImage({ image: IMAGE, docker })
        backend = new DockerBackend({ limits, image: IMAGE, docker })
      } else backend = new LocalBackend({ limits, firstUid: 61800, warn: () => {} })
      await backend.start()
      app = buildSandboxServer({ backend })
      url = await app.listen({ port: 0, host: '127.0.0.1' })
    })

    after(async () => {
      await app?.close()
      await backend?.close()
    })

    const refused = async (body: unknown, message: RegExp) => {
      const r = await post(url, body)
      assert.equal(r.code, 422, JSON.stringify(r.body))
      assert.equal(r.body.status, 'SandboxError')
      assert.match(r.body.message, message)
    }

    it(`${kind} - memory_limit_MB 1 to 10 is below python's minimum of 16 MiB: 422 naming the field`, async () => {
      for (let mb = 1; mb <= 10; mb++)
        await refused(
          { code: 'print(1)', language: 'python', memory_limit_MB: mb },
          new RegExp(
            `^memory_limit_MB: ${mb} is below the minimum of 16 MiB for python \\(-1 for the sandbox's limit of 512\\)$`,
          ),
        )
      await refused(
        { code: 'fn main() {}', language: 'rust', memory_limit_MB: 128 },
        /^memory_limit_MB: 128 is below the minimum of 256 MiB for rust/,
      )
      await refused(
        { code: 'print(1)', language: 'python', memory_limit_MB: -2 },
        /^invalid request: memory_limit_MB:/,
      )
      await refused(
        { code: 'print(1)', language: 'python', memory_limit_MB: 1.5 },
        /^invalid request: memory_limit_MB:/,
      )
    })

    it(`${kind} - a files value that is not base64 is 422 naming the file`, async () => {
      for (const bad of ['abc', 'a?==', '====', 'aGk=aGk=', 'aGk', '!!!!'])
        await refused(
          { code: 'print(1)', language: 'python', files: { 'x.txt': bad } },
          /^files: the value of 'x\.txt' is not base64$/,
        )
    })

    it(`${kind} - files 'a' and 'a/b' together (or a file under the source file) are 422`, async () => {
      await refused(
        { code: 'print(1)', language: 'python', files: { a: b64('1'), 'a/b': b64('2') } },
        /^files: 'a\/b' needs 'a' as a folder, but it is a file$/,
      )
      await refused(
        { code: 'print(1)', language: 'python', files: { 'x/y/z': b64('1'), './x/y': b64('2') } },
        /^files: 'x\/y\/z' needs '\.\/x\/y' as a folder, but it is a file$/,
      )
      await refused(
        { code: 'print(1)', language: 'python', files: { 'main.py/x': b64('1') } },
        /^files: 'main\.py\/x' needs 'main\.py \(the source file\)' as a folder, but it is a file$/,
      )
      await refused(
        { code: 'print(1)', language: 'python', files: { a: b64('1'), './a': b64('2') } },
        /^files: 'a' and '\.\/a' are the same file$/,
      )
    })

    it(`${kind} - a 5,000-character name or an over-long path is 422 naming the field`, async () => {
      const long = 'n'.repeat(5000)
      await refused(
        { code: 'print(1)', language: 'python', files: { [long]: b64('1') } },
        /^files: path 'n{80}\.\.\.' is 5000 bytes, over the limit of 1024$/,
      )
      await refused(
        { code: 'print(1)', language: 'python', files: { [`d/${'n'.repeat(300)}`]: b64('1') } },
        /^files: path 'd\/n{78}\.\.\.' has a name of 300 bytes, over the limit of 255$/,
      )
      const deep = Array.from({ length: 300 }, () => 'abcd').join('/')
      await refused(
        { code: 'print(1)', language: 'python', files: { [deep]: b64('1') } },
        /^files: path '.{80}\.\.\.' is 1499 bytes, over the limit of 1024$/,
      )
      await refused(
        { code: 'print(1)', language: 'python', fetch_files: [long] },
        /^fetch_files: path 'n{80}\.\.\.' is 5000 bytes, over the limit of 1024$/,
      )
      // a name of 255 bytes is the longest allowed, and works
      const ok = await post(url, {
        code: `print(open("${'m'.repeat(255)}").read())`,
        language: 'python',
        files: { ['m'.repeat(255)]: b64('longest') },
      })
      assert.equal(ok.body.status, 'Success', JSON.stringify(ok.body))
      assert.equal(ok.body.run_result?.stdout, 'longest\n')
    })

    it(`${kind} - fields of the wrong type or out of range are 422 naming them`, async () => {
      await refused(
        { code: 'print(1)', language: 'python', run_timeout: 0 },
        /^invalid request: run_timeout: /,
      )
      await refused(
        { code: 'print(1)', language: 'python', compile_timeout: -1 },
        /^invalid request: compile_timeout: /,
      )
      await refused(
        { code: 'print(1)', language: 'python', files: { a: 12 } },
        /^invalid request: files\.a: /,
      )
      await refused(
        { code: 'print(1)', language: 'python', fetch_files: 'out.txt' },
        /^invalid request: fetch_files: /,
      )
      await refused({ code: 7, language: 'python' }, /^invalid request: code: /)
    })

    it(`${kind} - a body that is not JSON is 415 naming the content type`, async () => {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
        const res = await fetch(`${url}/run_code`, {
          method: 'POST',
          headers: { 'content-type': type },
          body: '{"code": "print(1)", "language": "python"}',
        })
        assert.equal(res.status, 415)
        const body = (await res.json()) as { status: string; message: string }
        assert.equal(body.status, 'SandboxError')
        assert.equal(body.message, `content-type '${type}' is not supported: send application/json`)
      }
    })

    it(`${kind} - none of the bad requests above ran a job or replaced a sandbox; the next one runs`, async () => {
      // the 255-byte name above is the one good request so far
      assert.deepEqual(
        { done: backend.stats().done, recycled: backend.stats().recycled },
        { done: 1, recycled: 0 },
      )
      const r = await post(url, { code: 'print(6 * 7)', language: 'python', memory_limit_MB: 16 })
      assert.equal(r.body.status, 'Success', JSON.stringify(r.body))
      assert.equal(r.body.run_result?.stdout, '42\n')
    })
  })
}
