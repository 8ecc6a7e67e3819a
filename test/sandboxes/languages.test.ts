import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import Docker from 'dockerode'
import type { FastifyInstance } from 'fastify'
import type { RunCodeRequestInput, SandboxLanguage } from '../../protocols/index.ts'
import {
  buildSandboxImage,
  buildSandboxServer,
  DEFAULT_LIMITS,
  DockerBackend,
  LocalBackend,
  type SandboxBackend,
} from '../../sandboxes/index.ts'
import { LANGUAGES, missingToolchain } from '../../sandboxes/testing.ts'
import { within } from '../support/within.ts'
import { post } from './hostile-suite.ts'

/**
 * Every language on both backends (real docker containers, real bubblewrap sandboxes): a program
 * that reads stdin and answers, a compile error, a run-time error, a time-out; the per-language
 * settings that follow the request (JVM heap, Go's threads); the image's common programs (numpy with
 * OpenBLAS threads under 512 MiB, awk, which, cc); and every language mixed under 128 callers.
 */

const docker = new Docker()
const noDocker = await docker.ping().then(
  () => false,
  (e: Error) =>
    `no Docker daemon answers on /var/run/docker.sock (${e.message}); start it with .ci/services.sh`,
)
const missing = (Object.keys(LANGUAGES) as SandboxLanguage[]).flatMap(missingToolchain)
const noToolchains =
  missing.length > 0 ? `toolchains missing on this host (${missing.join(', ')}); run .ci/services.sh` : false
const IMAGE = 'triad-sandbox:languages-test'
const limits = { ...DEFAULT_LIMITS, concurrency: 2, memoryMB: 512, cpus: 1 }

/** A program per language that reads a number on stdin and prints twice it. */
const DOUBLE: Record<SandboxLanguage, string> = {
  python: 'print(int(input()) * 2)',
  bash: 'read n; echo $((n * 2))',
  nodejs: "console.log(Number(require('fs').readFileSync(0, 'utf8')) * 2)",
  cpp: '#include <iostream>\nint main() { long n; std::cin >> n; std::cout << n * 2 << "\\n"; }\n',
  java: 'import java.util.Scanner;\npublic class Main {\n  public static void main(String[] a) {\n    System.out.println(new Scanner(System.in).nextLong() * 2);\n  }\n}\n',
  go: 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar n int\n\tfmt.Scan(&n)\n\tfmt.Println(n * 2)\n}\n',
  rust: 'use std::io::Read;\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n    let n: i64 = s.trim().parse().unwrap();\n    println!("{}", n * 2);\n}\n',
  typescript:
    "import * as fs from 'fs'\nconst n: number = Number(fs.readFileSync(0, 'utf8').trim())\nconsole.log(n * 2)\n",
}

/** The four new languages' failure cases: code, and what the failing step's stderr must say. */
const CASES = {
  java: {
    compileError: {
      code: 'public class Main {\n  public static void main(String[] a) { int x = "s"; }\n}\n',
      exit: 1,
      stderr: /Main\.java:2: error: incompatible types/,
    },
    runError: {
      code: 'public class Main {\n  public static void main(String[] a) { int[] x = new int[1]; x[2] = 1; }\n}\n',
      exit: 1,
      stderr: /ArrayIndexOutOfBoundsException/,
    },
    loop: 'public class Main {\n  public static void main(String[] a) { while (true) {} }\n}\n',
  },
  go: {
    compileError: {
      code: 'package main\n\nfunc main() {\n\tx := 1\n}\n',
      exit: 2,
      stderr: /main\.go:4:\d+: x declared (but|and) not used/,
    },
    runError: { code: 'package main\n\nfunc main() {\n\tpanic("boom")\n}\n', exit: 2, stderr: /panic: boom/ },
    loop: 'package main\n\nfunc main() {\n\tfor {\n\t}\n}\n',
  },
  rust: {
    compileError: {
      code: 'fn main() {\n    let x: i32 = "s";\n}\n',
      exit: 1,
      stderr: /error\[E0308\]: mismatched types/,
    },
    runError: { code: 'fn main() {\n    panic!("boom");\n}\n', exit: 101, stderr: /panicked at 'boom'/ },
    loop: 'fn main() {\n    loop {}\n}\n',
  },
  typescript: {
    compileError: {
      code: 'const x = (1 +;\n',
      exit: 1,
      stderr: /main\.ts\(1,\d+\): error TS1109: Expression expected/,
    },
    runError: { code: "throw new Error('boom')\n", exit: 1, stderr: /Error: boom/ },
    loop: 'while (true) {}\n',
  },
} as const

type Target = { url: () => string; backend: () => SandboxBackend }

for (const kind of ['docker', 'local'] as const) {
  const skip = noToolchains || (kind === 'docker' ? noDocker : false)
  describe(`sandboxes/languages on the ${kind} backend`, { skip }, () => {
    let app: FastifyInstance
    let backend: SandboxBackend
    let url = ''
    const t: Target = { url: () => url, backend: () => backend }

    before(async () => {
      if (kind === 'docker') {
        const built = await buildSandboxImage({ image: IMAGE, docker })
        assert.deepEqual(built.missing, [])
        backend = new DockerBackend({ limits, image: IMAGE, docker })
      } else backend = new LocalBackend({ limits, firstUid: 61700, warn: () => {} })
      await backend.start()
      app = buildSandboxServer({ backend })
      url = await app.listen({ port: 0, host: '127.0.0.1' })
    })

    after(async () => {
      await app?.close()
      await backend?.close()
    })

    languageCases(kind, t)
    imageCases(kind, t)
    mixedCallers(kind, t)
  })
}

function languageCases(kind: string, t: Target): void {
  for (const language of ['java', 'go', 'rust', 'typescript'] as const) {
    const c = CASES[language]
    const minimum = LANGUAGES[language].minMemoryMB

    it(`${kind} - ${language}: a program reading stdin compiles and runs at its minimum memory (${minimum} MiB)`, async () => {
      const r = await post(t.url(), {
        language,
        code: DOUBLE[language],
        stdin: '21\n',
        memory_limit_MB: minimum,
        // What is checked is the result, not the speed: a first rustc or javac in a fresh slot on a
        // loaded 2-core machine can take longer than the default 10 s.
        compile_timeout: 60,
        run_timeout: 30,
      })
      assert.equal(r.code, 200)
      assert.equal(r.body.status, 'Success', JSON.stringify(r.body))
      assert.equal(r.body.compile_result?.status, 'Finished')
      assert.equal(r.body.compile_result?.return_code, 0)
      assert.equal(r.body.run_result?.stdout, '42\n')
      assert.equal(r.body.run_result?.return_code, 0)
    })

    it(`${kind} - ${language}: a compile error fails the compile step (exit ${c.compileError.exit}) and runs nothing`, async () => {
      const r = await post(t.url(), { language, code: c.compileError.code })
      assert.equal(r.code, 200)
      assert.equal(r.body.status, 'Failed', JSON.stringify(r.body))
      assert.equal(r.body.compile_result?.status, 'Finished')
      assert.equal(r.body.compile_result?.return_code, c.compileError.exit)
      assert.match(r.body.compile_result?.stderr ?? '', c.compileError.stderr)
      assert.equal(r.body.run_result, null)
    })

    it(`${kind} - ${language}: a run-time error fails the run with the language's exit code`, async () => {
      const r = await post(t.url(), { language, code: c.runError.code })
      assert.equal(r.body.status, 'Failed', JSON.stringify(r.body))
      assert.equal(r.body.compile_result?.return_code, 0)
      assert.equal(r.body.run_result?.status, 'Finished')
      assert.equal(r.body.run_result?.return_code, c.runError.exit)
      assert.match(r.body.run_result?.stderr ?? '', c.runError.stderr)
    })

    it(`${kind} - ${language}: an endless loop is stopped at run_timeout`, async () => {
      const r = await post(t.url(), { language, code: c.loop, run_timeout: 1 })
      assert.equal(r.body.status, 'Failed', JSON.stringify(r.body))
      assert.equal(r.body.compile_result?.return_code, 0)
      assert.equal(r.body.run_result?.status, 'TimeLimitExceeded')
      assert.equal(r.body.run_result?.return_code, null)
      assert.ok((r.body.run_result?.execution_time ?? 0) >= 1, JSON.stringify(r.body.run_result))
      assert.match(r.body.message, /run time limit exceeded/)
    })
  }

  it(`${kind} - typescript is transpiled, not type-checked: a type error still runs`, async () => {
    const r = await post(t.url(), {
      language: 'typescript',
      code: 'const x: number = "not a number" as any\nconsole.log(x)\n',
    })
    assert.equal(r.body.status, 'Success', JSON.stringify(r.body))
    assert.equal(r.body.run_result?.stdout, 'not a number\n')
  })

  it(`${kind} - java's heap follows memory_limit_MB (-Xmx is half of it)`, async () => {
    const code =
      'public class Main {\n  public static void main(String[] a) {\n    System.out.println(Runtime.getRuntime().maxMemory() >> 20);\n  }\n}\n'
    for (const [mb, heap] of [
      [256, 128],
      [512, 256],
    ] as const) {
      const r = await post(t.url(), { language: 'java', code, memory_limit_MB: mb })
      assert.equal(r.body.status, 'Success', JSON.stringify(r.body))
      // SerialGC reports the heap less one survivor space: within 8% under -Xmx
      const got = Number(r.body.run_result?.stdout)
      assert.ok(got <= heap && got > heap * 0.92, `memory_limit_MB ${mb}: max heap ${got} MiB, -Xmx${heap}m`)
    }
  })

  it(`${kind} - go and java size their threads to the job's cores (1), not the host's`, async () => {
    const goCode =
      'package main\n\nimport (\n\t"fmt"\n\t"runtime"\n)\n\nfunc main() {\n\tfmt.Println(runtime.GOMAXPROCS(0))\n}\n'
    const go = await post(t.url(), { language: 'go', code: goCode })
    assert.equal(go.body.run_result?.stdout, '1\n', JSON.stringify(go.body))
    const javaCode =
      'public class Main {\n  public static void main(String[] a) {\n    System.out.println(Runtime.getRuntime().availableProcessors());\n  }\n}\n'
    const java = await post(t.url(), { language: 'java', code: javaCode })
    assert.equal(java.body.run_result?.stdout, '1\n', JSON.stringify(java.body))
  })
}

function imageCases(kind: string, t: Target): void {
  it(`${kind} - numpy with OpenBLAS threads multiplies matrices under memory_limit_MB 512`, async () => {
    const code = [
      'import numpy',
      'from concurrent.futures import ThreadPoolExecutor',
      'a = numpy.ones((800, 800))',
      'first = int((a @ a).sum())',
      // OpenBLAS keeps one thread per core of the job (1: this one), none for the host's other cores
      "print([l for l in open('/proc/self/status') if l.startswith('Threads:')][0].split()[1])",
      'with ThreadPoolExecutor(4) as ex:',
      '    print([first] + list(ex.map(lambda _: int((a @ a).sum()), range(4))))',
      'print(round(float(numpy.linalg.det(numpy.eye(3) * 2)), 9))',
    ].join('\n')
    const r = await post(t.url(), { language: 'python', code, memory_limit_MB: 512, run_timeout: 60 })
    assert.equal(r.body.status, 'Success', JSON.stringify(r.body))
    assert.equal(r.body.run_result?.stdout, `1\n[${Array(5).fill('512000000').join(', ')}]\n8.0\n`)
  })

  it(`${kind} - awk, which and cc work (Debian's alternatives are in the image)`, async () => {
    const code = [
      "awk 'BEGIN { print 6 * 7 }'",
      'which python3',
      "printf 'int main(void) { return 3; }\\n' > a.c",
      'cc -o a a.c && ./a; echo "exit $?"',
      "c++ --version >/dev/null && echo 'c++ ok'",
    ].join('\n')
    const r = await post(t.url(), { language: 'bash', code })
    assert.equal(r.body.status, 'Success', JSON.stringify(r.body))
    assert.equal(r.body.run_result?.stdout, '42\n/usr/bin/python3\nexit 3\nc++ ok\n')
  })
}

function mixedCallers(kind: string, t: Target): void {
  // 128 compiles and runs on a 2-core machine: about a minute when quiet, over two when busy
  it(`${kind} - 128 callers at once, every language mixed: all answered, 0 failures`, {
    timeout: 600_000,
  }, async () => {
    const languages = Object.keys(DOUBLE) as SandboxLanguage[]
    const before = t.backend().stats()
    const calls = Array.from({ length: 128 }, (_, i) => {
      const language = languages[i % languages.length]!
      const body: RunCodeRequestInput = {
        language,
        code: DOUBLE[language],
        stdin: `${i}\n`,
        compile_timeout: 60,
      }
      return post(t.url(), body).then((r) => ({ i, language, r }))
    })
    const answers = await within(Promise.all(calls), 540_000, '128 mixed requests answered')
    const failures = answers.filter(
      ({ i, r }) =>
        r.code !== 200 || r.body.status !== 'Success' || r.body.run_result?.stdout !== `${i * 2}\n`,
    )
    assert.deepEqual(
      failures.map(({ i, language, r }) => `${i} ${language}: ${r.code} ${r.body.status} ${r.body.message}`),
      [],
    )
    assert.equal(t.backend().stats().done - before.done, 128)
  })
}
