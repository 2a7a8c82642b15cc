/**
 * RunStreamHub, one per server process (docs/interface.md: Events 1): the live run streams of this
 * process's SSE connections share one subscription per run to the run's RunEvents entity, and each
 * batch the entity delivers is rendered to SSE text once and handed, as the same bytes, to every
 * connection of that run. A thousand browsers on one run cost one cluster subscription and one
 * rendering per flush, not a thousand of each.
 *
 * The channel of a run subscribes from the entity's ring (`after: -1`) and keeps the last ~500
 * events it saw; it fills a jump in sequence numbers (an entity restarted or moved, a lost
 * volatile publish) from the database once, for all its connections. A connection from `after`
 * registers with the channel first, then reads from the database whatever precedes what the
 * channel can give it, so nothing committed meanwhile slips between the two; it drops what it
 * already sent and reads any gap from the database, so it sees every event once and in order.
 *
 * A connection that falls `SUBSCRIBER_BACKLOG` batches behind is ended (its stream closes with
 * `event: reconnect`, and the client resumes with `Last-Event-ID` from the database) rather than
 * buffered without bound. A connection's stream ends after the run's last event, `run.ended`.
 * The last connection of a run to leave stops the channel.
 */
import { RunEvents, readEvents } from "@bosun/actors/events/RunEvents"
import { RUN_ENDED, type WorkflowEvent } from "@bosun/domain"
import { type Cause, Context, Duration, Effect, Fiber, Layer, Option, Queue, Scope, Stream } from "effect"
import { Sse } from "effect/encoding"
import { SqlClient } from "effect/sql"

/** Consecutive events, as one flush committed them, and their SSE text. */
interface Batch {
  readonly first: number
  readonly last: number
  readonly events: ReadonlyArray<WorkflowEvent>
  readonly bytes: Uint8Array
}

interface Channel {
  readonly subscribers: Set<Queue.Queue<Batch, Cause.Done>>
  readonly recent: Array<Batch>
  recentEvents: number
  /** The newest sequence the channel has passed on; undefined until its first batch. */
  lastSeq: number | undefined
  follower: Fiber.Fiber<never> | undefined
}

/** About how many recent events a channel keeps for connections that join late (the entity's ring size). */
const RECENT_EVENTS = 500

/** Batches a connection may have waiting before it is ended as too slow. */
export const SUBSCRIBER_BACKLOG = 1024

/** How many stored events one database read returns. */
const REPLAY_PAGE = 500

/** The pause before a channel whose entity subscription ended subscribes again. */
const RESUBSCRIBE_DELAY = Duration.millis(250)

const utf8 = new TextEncoder()

/** Events as SSE text: `id:` is the sequence, the data the event's JSON. */
export const renderSse = (events: ReadonlyArray<WorkflowEvent>): Uint8Array =>
  utf8.encode(
    events
      .map((event) =>
        Sse.encoder.write({ _tag: "Event", id: String(event.seq), event: "message", data: JSON.stringify(event) })
      )
      .join("")
  )

/** A piece of a connection's stream: SSE text, and whether it holds the run's last event. */
export interface StreamChunk {
  readonly bytes: Uint8Array
  readonly ended: boolean
}

const chunkOf = (events: ReadonlyArray<WorkflowEvent>, bytes?: Uint8Array): StreamChunk => ({
  bytes: bytes ?? renderSse(events),
  ended: events.some((event) => event.type === RUN_ENDED)
})

const toBatch = (events: ReadonlyArray<WorkflowEvent>): Batch => ({
  first: events[0]?.seq ?? 0,
  last: events[events.length - 1]?.seq ?? 0,
  events,
  bytes: renderSse(events)
})

type Subscriber = Queue.Queue<Batch, Cause.Done>

/** What the hub's channels and connections share: one per hub. */
interface Hub {
  readonly runEvents: Effect.Success<typeof RunEvents.client>
  readonly sql: SqlClient.SqlClient
  readonly scope: Scope.Scope
  readonly channels: Map<string, Channel>
  readonly backlog: number
}

const storedEvents = (
  sql: SqlClient.SqlClient,
  organizationId: string,
  runId: string,
  after: number,
  upTo?: number,
  limit?: number
) => Effect.provideService(readEvents(organizationId, runId, after, upTo, limit), SqlClient.SqlClient, sql)

/** Stored events after `after` up to `upTo` (to the newest when undefined), a page at a time. */
const storedPages = (
  sql: SqlClient.SqlClient,
  organizationId: string,
  runId: string,
  after: number,
  upTo: number | undefined
) =>
  Stream.paginate(after, (cursor: number) =>
    Effect.map(
      storedEvents(sql, organizationId, runId, cursor, upTo, REPLAY_PAGE),
      (page) =>
        [
          page.length === 0 ? [] : [page],
          page.length === REPLAY_PAGE ? Option.some(page[page.length - 1]?.seq ?? cursor) : Option.none()
        ] as const
    )
  )

/** Keeps `batch` among the channel's recent ones, dropping the oldest beyond RECENT_EVENTS events. */
const keepRecent = (channel: Channel, batch: Batch) => {
  channel.recent.push(batch)
  channel.recentEvents += batch.events.length
  let oldest = channel.recent[0]
  while (oldest !== undefined && oldest !== batch && channel.recentEvents - oldest.events.length >= RECENT_EVENTS) {
    channel.recent.shift()
    channel.recentEvents -= oldest.events.length
    oldest = channel.recent[0]
  }
}

const publish = (
  sql: SqlClient.SqlClient,
  channel: Channel,
  organizationId: string,
  runId: string,
  events: ReadonlyArray<WorkflowEvent>
) =>
  Effect.gen(function* () {
    const known = channel.lastSeq
    const fresh = known === undefined ? events : events.filter((event) => event.seq > known)
    const first = fresh[0]
    if (first === undefined) return
    const missing =
      known !== undefined && first.seq > known + 1
        ? yield* storedEvents(sql, organizationId, runId, known, first.seq - 1)
        : []
    const batch = toBatch(missing.length === 0 ? fresh : [...missing, ...fresh])
    channel.lastSeq = batch.last
    keepRecent(channel, batch)
    for (const queue of channel.subscribers) {
      if (!Queue.offerUnsafe(queue, batch)) Queue.endUnsafe(queue)
    }
  })

// Follows the entity for as long as the channel has connections; a subscription that ends
// or fails (the entity moved, its runner stopped) is taken up again from the ring.
const follow = (hub: Hub, channel: Channel, organizationId: string, runId: string) =>
  hub
    .runEvents(runId)
    .Subscribe({ organizationId, after: -1 })
    .pipe(
      Stream.runForEach((events) => publish(hub.sql, channel, organizationId, runId, events)),
      Effect.catchCause((cause) =>
        Effect.logDebug("run_stream_subscription_lost").pipe(Effect.annotateLogs({ run_id: runId, cause }))
      ),
      Effect.andThen(Effect.sleep(RESUBSCRIBE_DELAY)),
      Effect.forever
    )

const register = (hub: Hub, organizationId: string, runId: string, key: string) =>
  Effect.gen(function* () {
    const queue = yield* Queue.bounded<Batch, Cause.Done>(hub.backlog)
    // One synchronous step: the queue joins and the recent batches are read with no batch
    // published in between, so every batch is in the one or the other.
    const { channel, snapshot, start } = yield* Effect.sync(() => {
      const existing = hub.channels.get(key)
      const channel: Channel = existing ?? {
        subscribers: new Set(),
        recent: [],
        recentEvents: 0,
        lastSeq: undefined,
        follower: undefined
      }
      if (existing === undefined) hub.channels.set(key, channel)
      channel.subscribers.add(queue)
      return { channel, snapshot: [...channel.recent], start: existing === undefined }
    })
    if (start) channel.follower = yield* Effect.forkIn(follow(hub, channel, organizationId, runId), hub.scope)
    return { channel, queue, snapshot }
  })

const unregister = (hub: Hub, key: string, channel: Channel, queue: Subscriber) =>
  Effect.gen(function* () {
    channel.subscribers.delete(queue)
    if (channel.subscribers.size > 0 || hub.channels.get(key) !== channel) return
    hub.channels.delete(key)
    // Not awaited: the connection that leaves last need not wait for the cluster to hear it.
    if (channel.follower !== undefined) yield* Effect.forkIn(Fiber.interrupt(channel.follower), hub.scope)
  })

/** One connection's stream: stored events after `after`, then the channel's batches, each event once. */
const connectionStream = (hub: Hub, organizationId: string, runId: string, after: number): Stream.Stream<StreamChunk> =>
  Stream.unwrap(
    Effect.gen(function* () {
      const key = `${organizationId}\u0000${runId}`
      const { snapshot, queue } = yield* Effect.acquireRelease(
        register(hub, organizationId, runId, key),
        ({ channel, queue }) => unregister(hub, key, channel, queue)
      )
      let delivered = after
      // Stored events after `delivered` up to `upTo` (to the newest when undefined), a page at a time.
      const history = (upTo: number | undefined) =>
        storedPages(hub.sql, organizationId, runId, delivered, upTo).pipe(
          Stream.map((page) => {
            delivered = page[page.length - 1]?.seq ?? delivered
            return chunkOf(page)
          })
        )
      const pass = (batch: Batch): Stream.Stream<StreamChunk> =>
        Stream.suspend(() => {
          if (batch.last <= delivered) return Stream.empty
          const gap = batch.first > delivered + 1 ? history(batch.first - 1) : Stream.empty
          return Stream.concat(
            gap,
            Stream.suspend(() => {
              const chunk =
                batch.first > delivered
                  ? chunkOf(batch.events, batch.bytes)
                  : chunkOf(batch.events.filter((event) => event.seq > delivered))
              delivered = batch.last
              return Stream.make(chunk)
            })
          )
        })
      // With nothing recent to start from, the database holds everything up to now; with
      // recent batches, the first one's gap (if any) is read from the database by `pass`.
      return Stream.concat(
        snapshot.length === 0 ? Stream.suspend(() => history(undefined)) : Stream.empty,
        Stream.concat(Stream.fromIterable(snapshot), Stream.fromQueue(queue)).pipe(Stream.flatMap(pass))
      ).pipe(Stream.takeUntil((chunk) => chunk.ended))
    })
  )

export class RunStreamHub extends Context.Service<
  RunStreamHub,
  {
    /**
     * The run's events after `after` as SSE text, then its live ones; ends after the run's last
     * event, or when a slow reader is cut off.
     */
    readonly stream: (organizationId: string, runId: string, after: number) => Stream.Stream<StreamChunk>
    /** The run's stored events after `after` as SSE text, and nothing live: for a run that has ended. */
    readonly stored: (organizationId: string, runId: string, after: number) => Stream.Stream<StreamChunk>
  }
>()("bosun/server/streams/RunStreamHub") {
  /** The hub with a backlog other than the default (tests). */
  static readonly layerWith = (settings: { readonly backlog: number }) =>
    Layer.effect(
      RunStreamHub,
      Effect.gen(function* () {
        const hub: Hub = {
          runEvents: yield* RunEvents.client,
          sql: yield* SqlClient.SqlClient,
          scope: yield* Scope.Scope,
          channels: new Map<string, Channel>(),
          backlog: settings.backlog
        }
        return RunStreamHub.of({
          stream: (organizationId, runId, after) => connectionStream(hub, organizationId, runId, after),
          stored: (organizationId, runId, after) =>
            storedPages(hub.sql, organizationId, runId, after, undefined).pipe(Stream.map((page) => chunkOf(page)))
        })
      })
    )

  static readonly layer = RunStreamHub.layerWith({ backlog: SUBSCRIBER_BACKLOG })
}
