/**
 * RunEvents, one entity per run (spec: Coordinators; Events 1): the fan-out behind the live run
 * stream. The attempt that writes a run's events publishes them here only after their database
 * write committed; the entity keeps the last 500 in a ring and pushes each to every subscriber,
 * wherever in the cluster the subscriber's SSE connection is (a subscription is a streaming
 * message to the entity's runner).
 *
 * A subscription from `after` gets, in order and exactly once: what the database holds between
 * `after` and the ring's oldest event, the ring, then live events. Anything that could slip
 * between those — an entity restarted mid-run (its ring starts empty), a lost volatile publish —
 * shows as a jump in sequence numbers, and the subscriber reads the missing range from the
 * database before going on, so a subscriber never sees a gap or a duplicate.
 */
import { WorkflowEvent } from "@bosun/domain"
import { Effect, Option, PubSub, Schema, Stream } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { SqlClient } from "effect/sql"

export const RING_SIZE = 500

/** How many stored events one replay query reads. */
const REPLAY_PAGE = 500

export const Publish = Rpc.make("Publish", { payload: { events: Schema.Array(WorkflowEvent) } })

export const Subscribe = Rpc.make("Subscribe", {
  payload: { organizationId: Schema.String, after: Schema.Int },
  success: WorkflowEvent,
  stream: true
})

export const RunEvents = Entity.make("RunEvents", [Publish, Subscribe])

interface EventRow {
  readonly seq: string
  readonly attempt: number
  readonly type: string
  readonly data: unknown
  readonly created_at: Date
}

/**
 * The run's stored events with `after < seq <= upTo` (no upper bound when `upTo` is undefined),
 * oldest first, at most `limit` of them when given.
 */
export const readEvents = Effect.fn("RunEvents.read")(function* (
  organizationId: string,
  runId: string,
  after: number,
  upTo?: number,
  limit?: number
) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<EventRow>`
    SELECT seq, attempt, type, data, created_at FROM workflow_events
    WHERE organization_id = ${organizationId} AND run_id = ${runId} AND seq > ${after}
      ${upTo === undefined ? sql`` : sql`AND seq <= ${upTo}`}
    ORDER BY seq
    ${limit === undefined ? sql`` : sql`LIMIT ${limit}`}`.pipe(Effect.orDie)
  return rows.map(
    (row): WorkflowEvent => ({
      seq: Number(row.seq),
      attempt: row.attempt,
      type: row.type,
      data: row.data,
      created_at: row.created_at.toISOString()
    })
  )
})

export const RunEventsLive = RunEvents.toLayer(
  Effect.gen(function* () {
    const address = yield* Entity.CurrentAddress
    const runId = address.entityId
    const sql = yield* SqlClient.SqlClient
    const live = yield* PubSub.unbounded<WorkflowEvent>()
    let ring: Array<WorkflowEvent> = []
    const lastSeq = () => ring[ring.length - 1]?.seq ?? 0

    const withStore = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
      Effect.provideService(effect, SqlClient.SqlClient, sql)

    return RunEvents.of({
      Publish: ({ payload }) =>
        Effect.gen(function* () {
          const fresh = payload.events.filter((event) => event.seq > lastSeq())
          if (fresh.length === 0) return
          ring = [...ring, ...fresh].slice(-RING_SIZE)
          yield* PubSub.publishAll(live, fresh)
        }),
      // Forked: a subscription lasts as long as its SSE stream, and an entity handles one message
      // at a time otherwise — Publish and every other subscriber would wait behind it.
      Subscribe: ({ payload }) =>
        Rpc.fork(
          Stream.unwrap(
            Effect.gen(function* () {
              // Subscribe before looking at the ring, so nothing published meanwhile is missed.
              const subscription = yield* PubSub.subscribe(live)
              const snapshot = ring
              const ringStart = snapshot[0]?.seq
              // What the ring lacks, from the database a page at a time as the subscriber reads:
              // a client resuming a long run never holds its whole history in memory at once.
              const upTo = ringStart === undefined ? undefined : ringStart - 1
              const older =
                upTo !== undefined && payload.after >= upTo
                  ? Stream.empty
                  : Stream.paginate(payload.after, (cursor: number) =>
                      Effect.map(
                        withStore(readEvents(payload.organizationId, runId, cursor, upTo, REPLAY_PAGE)),
                        (page) =>
                          [
                            page,
                            page.length === REPLAY_PAGE
                              ? Option.some(page[page.length - 1]?.seq ?? cursor)
                              : Option.none()
                          ] as const
                      )
                    )
              let delivered = payload.after
              const inOrder = (event: WorkflowEvent) =>
                Effect.gen(function* () {
                  if (event.seq <= delivered) return [] as ReadonlyArray<WorkflowEvent>
                  const missing =
                    event.seq > delivered + 1
                      ? yield* withStore(readEvents(payload.organizationId, runId, delivered, event.seq - 1))
                      : []
                  delivered = event.seq
                  return [...missing, event]
                })
              return older.pipe(
                Stream.concat(Stream.fromIterable(snapshot)),
                Stream.concat(Stream.fromSubscription(subscription)),
                Stream.mapEffect(inOrder),
                Stream.flatMap((events) => Stream.fromIterable(events))
              )
            })
          )
        )
    })
  }),
  { maxIdleTime: "10 minutes" }
)
