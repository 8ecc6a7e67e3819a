import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { startActorSystem } from '../../../actors/index.ts'
import {
  type ActorRef,
  type ChildSpec,
  childSupervision,
  envelope,
  Restart,
  Strategy,
  startTree,
  type TreeSpec,
} from '../../../actors/testing.ts'
import type { Envelope } from '../../../protocols/index.ts'
import { within } from '../../support/within.ts'

/** Makes actor names unique across the tests of this file (a test that fails may leave its actors). */
let serial = 0

/** What the children of one test did, in order: `start a`, `stop a`. */
type Events = string[]

/** A child with one actor that crashes on `test.crash`; `exit` ends its work (normally or not). */
function actorChild(
  id: string,
  events: Events,
  refs: Map<string, ActorRef>,
  restart: Restart = Restart.Permanent,
  extra: Partial<ChildSpec> = {},
): ChildSpec & { exit: (err?: Error) => void } {
  let exit: (err?: Error) => void = () => {}
  const name = `t${++serial}-${id}`
  return {
    id,
    restart,
    shutdownMs: 1_000,
    ...extra,
    exit: (err) => exit(err),
    start: async (ctx) => {
      events.push(`start ${id}`)
      assert.deepEqual(ctx.supervision, childSupervision)
      const ref = ctx.system.spawn(
        name,
        {
          init: () => ({}),
          receive: (_s, m: Envelope) => {
            if (m.type === 'test.crash') throw new Error(`${id} crashed`)
            return envelope('test.ok', {}) as Envelope
          },
        },
        { supervision: ctx.supervision },
      )
      refs.set(id, ref)
      const done = new Promise<void>((resolve, reject) => {
        exit = (err) => (err ? reject(err) : resolve())
      })
      done.catch(() => undefined)
      return {
        actors: [ref],
        done,
        stop: async () => {
          events.push(`stop ${id}`)
          await ref.stop()
        },
      }
    },
  }
}

const tree = (strategy: Strategy, children: ChildSpec[], intensity = 3): TreeSpec => ({
  name: 't',
  strategy,
  intensity,
  periodMs: 60_000,
  backoff: { initialMs: 0, maxMs: 0, factor: 1 },
  children,
})

/** Resolves once `events` has `n` entries. */
async function eventsReach(events: Events, n: number): Promise<void> {
  await within(
    (async () => {
      while (events.length < n) await new Promise((r) => setImmediate(r))
    })(),
    5_000,
    () => `${n} events; have ${JSON.stringify(events)}`,
  )
}

describe('actors/runtime/supervision-tree', () => {
  const system = startActorSystem({ name: 'tree-test' })
  after(() => system.stop())
  const crash = (ref: ActorRef | undefined) => ref!.tell(envelope('test.crash', {}) as Envelope)

  it('supervision-tree - children start in order and stop in reverse order', async () => {
    const events: Events = []
    const refs = new Map<string, ActorRef>()
    const t = await startTree(
      system,
      tree(Strategy.OneForOne, [
        actorChild('a', events, refs),
        actorChild('b', events, refs),
        actorChild('c', events, refs),
      ]),
    )
    assert.deepEqual(t.children(), ['a', 'b', 'c'])
    await t.stop()
    assert.deepEqual(events, ['start a', 'start b', 'start c', 'stop c', 'stop b', 'stop a'])
    assert.equal(refs.get('a')!.isStopped(), true)
    assert.deepEqual(t.children(), [])
  })

  it('supervision-tree - one-for-one: a crashed actor is started again alone, as a fresh actor', async () => {
    const events: Events = []
    const refs = new Map<string, ActorRef>()
    const t = await startTree(
      system,
      tree(Strategy.OneForOne, [
        actorChild('a', events, refs),
        actorChild('b', events, refs),
        actorChild('c', events, refs),
      ]),
    )
    const first = refs.get('b')!
    crash(first)
    await eventsReach(events, 5)
    assert.deepEqual(events.slice(3), ['stop b', 'start b'])
    assert.notEqual(refs.get('b'), first)
    assert.equal(first.isStopped(), true)
    assert.equal((await refs.get('b')!.ask(envelope('test.ping', {}) as Envelope, 1_000)).type, 'test.ok')
    assert.equal(t.restarts, 1)
    await t.stop()
  })

  it('supervision-tree - one-for-all: every child is stopped in reverse order and started again in order', async () => {
    const events: Events = []
    const refs = new Map<string, ActorRef>()
    const t = await startTree(
      system,
      tree(Strategy.OneForAll, [
        actorChild('a', events, refs),
        actorChild('b', events, refs),
        actorChild('c', events, refs),
      ]),
    )
    crash(refs.get('b'))
    await eventsReach(events, 9)
    assert.deepEqual(events.slice(3), ['stop c', 'stop b', 'stop a', 'start a', 'start b', 'start c'])
    await t.stop()
  })

  it('supervision-tree - rest-for-one: the failed child and those after it are started again', async () => {
    const events: Events = []
    const refs = new Map<string, ActorRef>()
    const t = await startTree(
      system,
      tree(Strategy.RestForOne, [
        actorChild('a', events, refs),
        actorChild('b', events, refs),
        actorChild('c', events, refs),
      ]),
    )
    crash(refs.get('b'))
    await eventsReach(events, 7)
    assert.deepEqual(events.slice(3), ['stop c', 'stop b', 'start b', 'start c'])
    await t.stop()
  })

  it('supervision-tree - past the intensity the tree stops every child and done rejects with the child error', async () => {
    const events: Events = []
    const refs = new Map<string, ActorRef>()
    const t = await startTree(
      system,
      tree(Strategy.OneForOne, [actorChild('a', events, refs), actorChild('b', events, refs)], 1),
    )
    crash(refs.get('b'))
    await eventsReach(events, 4)
    crash(refs.get('b'))
    await assert.rejects(within(t.done, 5_000, 'the tree to fail'), /^Error: b crashed$/)
    assert.deepEqual(events, ['start a', 'start b', 'stop b', 'start b', 'stop b', 'stop a'])
    assert.deepEqual(t.children(), [])
  })

  it('supervision-tree - intensity 0: the first failure ends the tree', async () => {
    const events: Events = []
    const refs = new Map<string, ActorRef>()
    const t = await startTree(
      system,
      tree(Strategy.OneForAll, [actorChild('a', events, refs), actorChild('b', events, refs)], 0),
    )
    crash(refs.get('a'))
    await assert.rejects(within(t.done, 5_000, 'the tree to fail'), /a crashed/)
    assert.deepEqual(events, ['start a', 'start b', 'stop b', 'stop a'])
  })

  it('supervision-tree - restart kinds: a temporary child is not restarted, a transient one not after a normal exit, a permanent one is', async () => {
    const events: Events = []
    const refs = new Map<string, ActorRef>()
    const temporary = actorChild('temp', events, refs, Restart.Temporary)
    const transient = actorChild('trans', events, refs, Restart.Transient)
    const permanent = actorChild('perm', events, refs, Restart.Permanent)
    const t = await startTree(system, tree(Strategy.OneForOne, [temporary, transient, permanent]))
    crash(refs.get('temp'))
    await eventsReach(events, 4)
    transient.exit()
    await eventsReach(events, 5)
    permanent.exit()
    await eventsReach(events, 7)
    assert.deepEqual(events.slice(3), ['stop temp', 'stop trans', 'stop perm', 'start perm'])
    assert.deepEqual(t.children(), ['perm'])
    await t.stop()
  })

  it('supervision-tree - a transient child whose work fails is restarted', async () => {
    const events: Events = []
    const refs = new Map<string, ActorRef>()
    const transient = actorChild('trans', events, refs, Restart.Transient)
    const t = await startTree(system, tree(Strategy.OneForOne, [transient]))
    transient.exit(new Error('work failed'))
    await eventsReach(events, 3)
    assert.deepEqual(events, ['start trans', 'stop trans', 'start trans'])
    await t.stop()
  })

  it("supervision-tree - a significant child's normal exit resolves done; the others run until stop", async () => {
    const events: Events = []
    const refs = new Map<string, ActorRef>()
    const main = actorChild('main', events, refs, Restart.Transient, { significant: true })
    const t = await startTree(system, tree(Strategy.OneForAll, [actorChild('lock', events, refs), main]))
    main.exit()
    await within(t.done, 5_000, 'done')
    assert.deepEqual(t.children(), ['lock', 'main'])
    await t.stop()
    assert.deepEqual(events, ['start lock', 'start main', 'stop main', 'stop lock'])
  })

  it('supervision-tree - a child that cannot start stops those started before it, and the start rejects with its error', async () => {
    const events: Events = []
    const refs = new Map<string, ActorRef>()
    const broken: ChildSpec = {
      id: 'broken',
      restart: Restart.Permanent,
      shutdownMs: 1_000,
      start: async () => {
        throw new Error('no weights')
      },
    }
    await assert.rejects(
      startTree(
        system,
        tree(Strategy.OneForOne, [actorChild('a', events, refs), actorChild('b', events, refs), broken]),
      ),
      /^Error: no weights$/,
    )
    assert.deepEqual(events, ['start a', 'start b', 'stop b', 'stop a'])
  })

  it('supervision-tree - a stop past its shutdown is said and the others still stop', async () => {
    const events: Events = []
    const lines: string[] = []
    const stuck: ChildSpec = {
      id: 'stuck',
      restart: Restart.Permanent,
      shutdownMs: 20,
      start: async () => ({ actors: [], stop: () => new Promise<void>(() => {}) }),
    }
    const t = await startTree(system, tree(Strategy.OneForOne, [actorChild('a', events, new Map()), stuck]), {
      log: (l) => lines.push(l),
    })
    await t.stop()
    assert.deepEqual(lines, ['t/stuck: did not stop within 20 ms; going on'])
    assert.deepEqual(events, ['start a', 'stop a'])
  })

  it('supervision-tree - two children with one id are refused', async () => {
    const events: Events = []
    await assert.rejects(
      startTree(
        system,
        tree(Strategy.OneForOne, [actorChild('a', events, new Map()), actorChild('a', events, new Map())]),
      ),
      /tree t: two children named 'a'/,
    )
    assert.deepEqual(events, [])
  })
})
