import type { RunCodeRequest, SandboxLanguage } from '../protocols/index.ts'
import { SandboxRequestError } from './errors.ts'
import { installedLanguages, LANGUAGES, missingToolchain } from './languages.ts'
import type { SandboxLimits } from './limits.ts'
import { checkText, shownText } from './unicode-text.ts'

/** Longest name of one path component, bytes of UTF-8 (Linux `NAME_MAX`). */
export const MAX_NAME_BYTES = 255
/** Longest relative path of `files` / `fetch_files`, bytes of UTF-8 (well under `PATH_MAX`, 4096,
 *  which must also hold the work dir's own path). */
export const MAX_PATH_BYTES = 1024

/** Canonical base64 (RFC 4648 section 4, with padding): whole 4-character groups. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * Checks a path of `files` / `fetch_files` and returns its components: relative, inside the work
 * dir, each component at most `MAX_NAME_BYTES` and the whole at most `MAX_PATH_BYTES`.
 * @throws SandboxRequestError (HTTP 422) naming the field and the path (cut to 80 characters).
 */
export function checkRelativePath(path: string, field: string): string[] {
  const shown = path.length > 80 ? `${path.slice(0, 80)}...` : path
  const parts = path.split('/').filter((p) => p !== '' && p !== '.')
  if (path.startsWith('/') || path.includes('\0') || parts.length === 0 || parts.includes('..'))
    throw new SandboxRequestError(`${field}: path '${shown}' must be relative and stay inside the work dir`)
  const bytes = Buffer.byteLength(path)
  if (bytes > MAX_PATH_BYTES)
    throw new SandboxRequestError(
      `${field}: path '${shown}' is ${bytes} bytes, over the limit of ${MAX_PATH_BYTES}`,
    )
  for (const p of parts)
    if (Buffer.byteLength(p) > MAX_NAME_BYTES)
      throw new SandboxRequestError(
        `${field}: path '${shown}' has a name of ${Buffer.byteLength(p)} bytes, over the limit of ${MAX_NAME_BYTES}`,
      )
  return parts
}

/**
 * Checks what the schema cannot: a request's memory ask against its language's minimum and the
 * server's limit, and its `files` / `fetch_files` paths and contents. Run before a slot is taken,
 * so a bad request costs no sandbox.
 * @param installed the languages whose toolchain this host has (default `installedLanguages()`).
 * @throws SandboxRequestError (HTTP 422) naming the field:
 * - `code`, `stdin`, a `files` name or value, or a `fetch_files` path that is not valid UTF-8 text
 *   (a lone UTF-16 surrogate; see `checkText`);
 * - `language` whose toolchain is not installed here;
 * - `memory_limit_MB` below the language's `minMemoryMB` (or the server's limit below it);
 * - a `files` value that is not canonical base64;
 * - a `files` path that is not relative, has a name over 255 bytes or is over 1024 bytes;
 * - two `files` paths that are one file (`a` and `./a`), or a file that another path needs as a
 *   folder (`a` and `a/b`; the source file, e.g. `main.py`, counts as a file);
 * - a bad `fetch_files` path.
 */
export function checkRequest(
  request: RunCodeRequest,
  limits: SandboxLimits,
  installed: ReadonlySet<SandboxLanguage> = installedLanguages(),
): void {
  checkText(request.code, 'code')
  if (request.stdin) checkText(request.stdin, 'stdin')
  for (const [path, value] of Object.entries(request.files)) {
    checkText(path, 'files', `the name '${shownText(path)}' `)
    if (value !== null) checkText(value, 'files', `the value of '${shownText(path)}' `)
  }
  for (const path of request.fetch_files) checkText(path, 'fetch_files', `the path '${shownText(path)}' `)
  const spec = LANGUAGES[request.language]
  if (!installed.has(request.language))
    throw new SandboxRequestError(
      `language: ${request.language} is not installed in this sandbox (missing: ${missingToolchain(request.language).join(', ') || 'its toolchain'}); install Debian's ${spec.packages.join(' ')} (.ci/services.sh) and restart`,
    )
  const asked = request.memory_limit_MB
  if (limits.memoryMB < spec.minMemoryMB)
    throw new SandboxRequestError(
      `memory_limit_MB: ${request.language} needs at least ${spec.minMemoryMB} MiB; this sandbox allows ${limits.memoryMB}`,
    )
  if (asked > 0 && asked < spec.minMemoryMB)
    throw new SandboxRequestError(
      `memory_limit_MB: ${asked} is below the minimum of ${spec.minMemoryMB} MiB for ${request.language} (-1 for the sandbox's limit of ${limits.memoryMB})`,
    )
  // normalized path -> the path as the request wrote it; the source file is written as well
  const files = new Map<string, string>()
  for (const [path, b64] of Object.entries(request.files)) {
    const key = checkRelativePath(path, 'files').join('/')
    if (b64 !== null && !BASE64.test(b64))
      throw new SandboxRequestError(`files: the value of '${path}' is not base64`)
    const same = files.get(key)
    if (same !== undefined) throw new SandboxRequestError(`files: '${same}' and '${path}' are the same file`)
    files.set(key, path)
  }
  if (!files.has(spec.source)) files.set(spec.source, `${spec.source} (the source file)`)
  for (const [key, path] of files) {
    const parts = key.split('/')
    for (let i = 1; i < parts.length; i++) {
      const folder = files.get(parts.slice(0, i).join('/'))
      if (folder !== undefined)
        throw new SandboxRequestError(`files: '${path}' needs '${folder}' as a folder, but it is a file`)
    }
  }
  for (const path of request.fetch_files) checkRelativePath(path, 'fetch_files')
}
