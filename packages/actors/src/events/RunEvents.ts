/**
 * RunEvents, one entity per run (docs/interface.md: Coordinators; Events 1): the fan-out behind the
 * live run stream. The attempt that writes a run's events publishes them here only after their
 * database write committed (so does the Scheduler with a run's last event, `run.ended`); the entity keeps the last 500 in a ring and pushes each committed batch
 * to every subscriber, wherever in the cluster the subscriber's SSE connection is (a subscription
 * is a streaming message to the entity's runner, forked so it never holds the entity).
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

/**
 * A subscription from `after` (a sequence, or -1: from the ring's oldest event, with no stored
 * history before it — how a process's stream hub follows a run) streams batches: consecutive events in order, as they were committed together.
 * One message per flush and subscriber instead of one per event keeps the fan-out's cost per
 * event low (the cluster's reply path costs the same for one event as for a hundred).
 */
export const Subscribe = Rpc.make("Subscribe", {
  payload: { organizationId: Schema.String, after: Schema.Int },
  success: Schema.Array(WorkflowEvent),
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
    const live = yield* PubSub.unbounded<ReadonlyArray<WorkflowEvent>>()
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
          yield* PubSub.publish(live, fresh)
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
              const fromRing = payload.after < 0
              const older =
                fromRing || (upTo !== undefined && payload.after >= upTo)
                  ? Stream.empty
                  : Stream.paginate(payload.after, (cursor: number) =>
                      Effect.map(
                        withStore(readEvents(payload.organizationId, runId, cursor, upTo, REPLAY_PAGE)),
                        (page) =>
                          [
                            page.length === 0 ? [] : [page],
                            page.length === REPLAY_PAGE
                              ? Option.some(page[page.length - 1]?.seq ?? cursor)
                              : Option.none()
                          ] as const
                      )
                    )
              // From the ring, the first event delivered sets where the subscription starts.
              let delivered = fromRing ? undefined : payload.after
              const inOrder = (batch: ReadonlyArray<WorkflowEvent>) =>
                Effect.gen(function* () {
                  const start = delivered ?? (batch[0]?.seq ?? 1) - 1
                  const fresh = batch.filter((event) => event.seq > start)
                  const first = fresh[0]
                  if (first === undefined) return fresh
                  const missing =
                    first.seq > start + 1
                      ? yield* withStore(readEvents(payload.organizationId, runId, start, first.seq - 1))
                      : []
                  const events = missing.length === 0 ? fresh : [...missing, ...fresh]
                  delivered = events[events.length - 1]?.seq ?? start
                  return events
                })
              return older.pipe(
                Stream.concat(snapshot.length === 0 ? Stream.empty : Stream.make(snapshot)),
                Stream.concat(Stream.fromSubscription(subscription)),
                Stream.mapEffect(inOrder),
                Stream.filter((events) => events.length > 0)
              )
            })
          )
        )
    })
  }),
  // Short: each resident entity holds its ring and PubSub (measured ~26 KB plus the ring's events),
  // and a finished run's entity would otherwise stay for its whole idle time. A live subscription
  // keeps it; one restarted later fills from the database.
  { maxIdleTime: "1 minute" }
)
