import { type ChildProcess, spawn } from 'node:child_process'
import { extname, resolve } from 'node:path'

/**
 * The environment an agent program is started with (docs/gateway.md). The two
 * `OPENAI_*` variables are those the official OpenAI clients read by default, so an agent written
 * against them needs no change: its base URL already names its session.
 */
export const AgentEnv = {
  /** The session's OpenAI base URL, `<gateway>/sessions/<id>/v1`. */
  OpenAIBaseUrl: 'OPENAI_BASE_URL',
  /** The gateway's API key (also `TRIAD_API_KEY`). */
  OpenAIApiKey: 'OPENAI_API_KEY',
  /** The gateway's root URL, `http://127.0.0.1:<port>` (with the session header, `/v1/...` works too). */
  GatewayUrl: 'TRIAD_GATEWAY_URL',
  ApiKey: 'TRIAD_API_KEY',
  /** The episode's session id (header `x-triad-session`, or the path segment `/sessions/<id>`). */
  Session: 'TRIAD_SESSION',
  /** Where the agent posts the episode's reward, `<gateway>/sessions/<id>/reward`. */
  RewardUrl: 'TRIAD_REWARD_URL',
  /** The instance to play, a JSON object (`{"index": i, "seed": s}` or the task's JSONL row with `index`). */
  Instance: 'TRIAD_INSTANCE',
  /** The task's name. */
  Task: 'TRIAD_TASK',
  /** Most chat calls of the episode (the task's `maxTurns`). */
  MaxTurns: 'TRIAD_MAX_TURNS',
} as const
export type AgentEnv = (typeof AgentEnv)[keyof typeof AgentEnv]

/** Most bytes of an agent's stderr kept for its failure's message. */
const TAIL_BYTES = 2_048

/** A running agent program. */
export interface AgentProcess {
  child: ChildProcess
  /** Resolves when it exited: its code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** The last `TAIL_BYTES` of its stderr (or an error starting it). */
  stderrTail(): string
  /** Ends it and every process it started (its process group), at once. */
  kill(): void
}

/** The command that runs `program`: node for TypeScript and JavaScript, python3 for Python, else itself. */
export function commandOf(program: string): { command: string; args: string[] } {
  const file = resolve(program)
  switch (extname(file)) {
    case '.ts':
    case '.mts':
      return { command: process.execPath, args: ['--import', 'tsx', file] }
    case '.js':
    case '.mjs':
    case '.cjs':
      return { command: process.execPath, args: [file] }
    case '.py':
      return { command: 'python3', args: [file] }
    default:
      return { command: file, args: [] }
  }
}

/**
 * Starts an agent program with `env` added to this process's environment, in its own process group
 * (so a kill ends what it started too); stdout is discarded, stderr kept as a tail.
 */
export function startAgentProgram(program: string, env: Record<string, string>): AgentProcess {
  const { command, args } = commandOf(program)
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  })
  let tail = ''
  child.stderr!.setEncoding('utf8')
  child.stderr!.on('data', (d: string) => {
    tail = (tail + d).slice(-TAIL_BYTES)
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('error', (err) => {
      tail = `${tail}could not start ${command}: ${err.message}`.slice(-TAIL_BYTES)
      resolve({ code: 127, signal: null })
    })
    child.once('close', (code, signal) => resolve({ code, signal }))
  })
  return {
    child,
    exited,
    stderrTail: () => tail.trim(),
    kill: () => {
      if (child.pid === undefined) return
      // The group too when the program itself has exited: what it started may still run.
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {
        // No such group: every process of it has ended.
      }
    },
  }
}
