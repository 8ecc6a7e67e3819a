import { z } from 'zod'
import { defineMessage } from './message.ts'

/**
 * The echo service: a probe of a node's actor path (latency, liveness, the demo of two processes).
 */

/** `echo.ping`: asks for the same `data` back. `sentAt` is the sender's clock, ms. */
export const EchoPing = defineMessage(
  'echo.ping',
  z.object({ seq: z.number().int(), sentAt: z.number(), data: z.unknown() }),
)

/** Reply to `echo.ping`: the same fields plus who answered. */
export const EchoPong = defineMessage(
  'echo.pong',
  z.object({ seq: z.number().int(), sentAt: z.number(), data: z.unknown(), by: z.string() }),
)

export const echoMessages = [EchoPing, EchoPong] as const
