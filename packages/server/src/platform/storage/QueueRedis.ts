/**
 * Redis Streams queue adapter. Each queue is a stream `<prefix><queue>` read through the consumer
 * group `bosun`; its dead letters are the stream `<prefix><queue>-dlq`.
 *
 * - New messages: `XREADGROUP ... >` (first delivery).
 * - Redelivery: `XAUTOCLAIM` of entries idle for longer than the retry delay (a failed message)
 *   or the visibility timeout (a consumer that died); the delivery count comes from the pending
 *   list (`XPENDING`), which `XAUTOCLAIM` increments.
 * - A message being handled is heartbeated with `XCLAIM ... JUSTID`, which resets its idle time
 *   without counting a delivery, so only failed or orphaned messages are reclaimed.
 * - Ack is `XACK` + `XDEL` in one `MULTI`, batched over the messages acked in one event-loop
 *   turn; burial adds the entry to the `-dlq` stream and acks it in one `MULTI` of its own.
 */

import { Redis } from "@bosun/platform/Redis"
import { Duration, Effect, Layer } from "effect"
import type { Redis as IORedis } from "ioredis"
import {
  type ConsumeOptions,
  type DeadLetter,
  deadLetterQueueOf,
  type QueueError,
  type QueueMessage,
  type QueueName,
  type QueueSettings,
  Queues,
  queueFailure
} from "./Queue.ts"
import { type QueueDriver, runConsumer } from "./QueueConsumer.ts"

const GROUP = "bosun"
const BLOCK_MS = 1000

type StreamEntry = [id: string, fields: Array<string>]

const fieldsOf = (fields: Array<string>) => {
  const record: Record<string, string> = {}
  for (let i = 0; i + 1 < fields.length; i += 2) record[fields[i] as string] = fields[i + 1] as string
  return record
}

/** The `body` field of an entry, read without building a record (once per message delivered). */
const bodyOf = (fields: Array<string>) => {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === "body") return fields[i + 1] as string
  return ""
}

/** The client, the stream names and the timings every part of the Redis queues reads. */
interface Streams {
  readonly client: IORedis
  readonly streamOf: (queue: QueueName) => string
  readonly dlqOf: (queue: QueueName) => string
  readonly retryMs: number
  readonly visibilityMs: number
  readonly blockMs: number
  readonly ackSoon: (stream: string, id: string) => Promise<unknown>
}

/**
 * Acks gathered per stream and sent together: every message of the stream whose handler
 * succeeded during one event-loop turn (in any consumer of this process) is acked by one
 * `MULTI` of `XACK` + `XDEL` over all their ids, flushed on the next turn. A `MULTI` per
 * message (four commands to write and four replies to parse) was the largest cost of
 * consuming. Each ack still completes only once its batch has run, so a failed ack is
 * reported (and its message redelivered) as before.
 */
const ackBatcher = (client: IORedis) => {
  const ackBatches = new Map<string, { readonly ids: Array<string>; readonly done: Promise<unknown> }>()
  const ackSoon = (stream: string, id: string): Promise<unknown> => {
    const open = ackBatches.get(stream)
    if (open !== undefined) {
      open.ids.push(id)
      return open.done
    }
    const ids = [id]
    const done = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      ackBatches.delete(stream)
      return client
        .multi()
        .xack(stream, GROUP, ...ids)
        .xdel(stream, ...ids)
        .exec()
    })
    ackBatches.set(stream, { ids, done })
    return done
  }
  return ackSoon
}

/** How `runConsumer` reads, acks, buries and heartbeats one queue's stream as `consumer`. */
const driverFor = (streams: Streams, queue: QueueName, reader: IORedis, consumer: string): QueueDriver => {
  const { client, streamOf, dlqOf, retryMs, visibilityMs, blockMs, ackSoon } = streams
  const stream = streamOf(queue)
  const run = <A>(what: string, f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: queueFailure(what) })
  let nextReclaimAt = 0

  /** Entries idle past `minIdle`, claimed for this consumer, with their delivery counts. */
  const reclaim = (minIdle: number, max: number) =>
    run("reclaim", async (): Promise<Array<QueueMessage>> => {
      const [, entries] = (await reader.xautoclaim(stream, GROUP, consumer, minIdle, "0-0", "COUNT", max)) as [
        string,
        Array<StreamEntry | null>
      ]
      const live = entries.filter((e): e is StreamEntry => e !== null && e[1] !== null)
      if (live.length === 0) return []
      // One XPENDING per entry, all sent at once: one round trip rather than one per entry.
      return Promise.all(
        live.map(async ([id, fields]): Promise<QueueMessage> => {
          const pending = (await reader.xpending(stream, GROUP, id, id, 1)) as Array<[string, string, number, number]>
          return { id, queue, body: bodyOf(fields), deliveries: Number(pending[0]?.[3] ?? 1) }
        })
      )
    })

  const readNew = (max: number, block: boolean) =>
    run("read", async (): Promise<Array<QueueMessage>> => {
      const reply = (await (block
        ? reader.xreadgroup("GROUP", GROUP, consumer, "COUNT", max, "BLOCK", blockMs, "STREAMS", stream, ">")
        : reader.xreadgroup("GROUP", GROUP, consumer, "COUNT", max, "STREAMS", stream, ">"))) as Array<
        [string, Array<StreamEntry>]
      > | null
      const entries = reply?.[0]?.[1] ?? []
      return entries.map(([id, fields]): QueueMessage => ({ id, queue, body: bodyOf(fields), deliveries: 1 }))
    })

  return {
    claim: (max) =>
      Effect.gen(function* () {
        // Failed messages (idle past the retry delay) and a dead consumer's (idle past the
        // visibility timeout) are looked for at most every half retry delay, new ones always.
        const now = Date.now()
        if (now >= nextReclaimAt) {
          const reclaimed = yield* reclaim(Math.min(retryMs, visibilityMs), max)
          if (reclaimed.length === max) return reclaimed
          nextReclaimAt = now + Math.max(1, Math.floor(Math.min(retryMs, visibilityMs) / 2))
          if (reclaimed.length > 0) return reclaimed
        }
        return yield* readNew(max, false)
      }),
    ack: (message) => run("ack", () => ackSoon(stream, message.id)).pipe(Effect.asVoid),
    // The entry stays pending; not heartbeated any more, it is reclaimed once the retry delay passes.
    retry: () => Effect.void,
    bury: (message, error) =>
      run("bury", () =>
        client
          .multi()
          .xadd(
            dlqOf(queue),
            "*",
            "id",
            message.id,
            "body",
            message.body,
            "deliveries",
            String(message.deliveries),
            "last_error",
            error,
            "failed_at",
            String(Date.now())
          )
          .xack(stream, GROUP, message.id)
          .xdel(stream, message.id)
          .exec()
      ).pipe(Effect.asVoid),
    heartbeat: (messages) =>
      run("heartbeat", () => client.xclaim(stream, GROUP, consumer, 0, ...messages.map((m) => m.id), "JUSTID")).pipe(
        Effect.asVoid
      ),
    // Reclaims take any entry idle past the retry delay (that is how a failed message comes
    // back), so a message in flight must be heartbeated well within it, not only within the
    // visibility timeout: otherwise a handler slower than the retry delay is handled twice.
    reclaimAfter: Duration.millis(Math.min(retryMs, visibilityMs)),
    // Blocks on the stream itself, no longer than the retry delay so reclaims stay timely.
    waitForWork: (max) => readNew(max, true)
  }
}

/** The dead letters of a queue: listed, counted, and replayed onto the queue's stream. */
const deadLetters = (
  { client, streamOf, dlqOf }: Streams,
  ensureGroup: (queue: QueueName) => Effect.Effect<void, QueueError>
) => {
  const list = Effect.fn("Queues.deadLetters.list")(function* (queue: QueueName, limit = 100) {
    const entries = (yield* Effect.tryPromise({
      try: () => client.xrange(dlqOf(queue), "-", "+", "COUNT", limit),
      catch: queueFailure("list dead letters")
    })) as Array<StreamEntry>
    return entries.map(([id, fields]): DeadLetter => {
      const f = fieldsOf(fields)
      return {
        id,
        queue,
        body: f.body ?? "",
        deliveries: Number(f.deliveries ?? 0),
        lastError: f.last_error ?? "",
        failedAt: new Date(Number(f.failed_at ?? 0))
      }
    })
  })

  const count = Effect.fn("Queues.deadLetters.count")(function* (queue: QueueName) {
    return yield* Effect.tryPromise({ try: () => client.xlen(dlqOf(queue)), catch: queueFailure("count dead letters") })
  })

  const replay = Effect.fn("Queues.deadLetters.replay")(function* (queue: QueueName, ids?: ReadonlyArray<string>) {
    yield* ensureGroup(queue)
    const letters = yield* list(queue, 10_000)
    const chosen = ids === undefined ? letters : letters.filter((l) => ids.includes(l.id))
    for (const letter of chosen) {
      yield* Effect.tryPromise({
        try: () => client.multi().xadd(streamOf(queue), "*", "body", letter.body).xdel(dlqOf(queue), letter.id).exec(),
        catch: queueFailure("replay dead letter")
      })
    }
    return chosen.length
  })

  return { list, count, replay }
}

export const makeRedisQueues = Effect.fn("Queues.makeRedis")(function* (
  settings: QueueSettings & { readonly prefix: string }
) {
  const redis = yield* Redis
  const client = redis.client
  const streamOf = (queue: QueueName) => `${settings.prefix}${queue}`
  const dlqOf = (queue: QueueName) => `${settings.prefix}${deadLetterQueueOf(queue)}`
  const retryMs = Math.max(1, Math.round(Duration.toMillis(settings.retryDelay)))
  const visibilityMs = Math.max(1, Math.round(Duration.toMillis(settings.visibilityTimeout)))
  const ensured = new Set<string>()
  const blockMs = Math.min(BLOCK_MS, retryMs, visibilityMs)
  const streams: Streams = { client, streamOf, dlqOf, retryMs, visibilityMs, blockMs, ackSoon: ackBatcher(client) }

  const ensureGroup = (queue: QueueName) =>
    ensured.has(queue)
      ? Effect.void
      : Effect.tryPromise({
          try: () =>
            client.xgroup("CREATE", streamOf(queue), GROUP, "0", "MKSTREAM").catch((error: Error) => {
              if (!error.message.includes("BUSYGROUP")) throw error
            }),
          catch: queueFailure("create consumer group")
        }).pipe(Effect.tap(() => Effect.sync(() => ensured.add(queue))))

  const xadd = (queue: QueueName, body: string) =>
    Effect.tryPromise({
      try: async () => (await client.xadd(streamOf(queue), "*", "body", body)) ?? "",
      catch: queueFailure("send")
    })
  // No `Effect.fn` span here: on the hot path its span and stack capture cost a quarter of the
  // throughput; callers (the outbox relay) trace their own work.
  const send = (queue: QueueName, body: string): Effect.Effect<string, QueueError> =>
    ensured.has(queue) ? xadd(queue, body) : Effect.andThen(ensureGroup(queue), xadd(queue, body))

  const consume = <E, R>(
    queue: QueueName,
    handler: (message: QueueMessage) => Effect.Effect<void, E, R>,
    options?: ConsumeOptions
  ) =>
    Effect.gen(function* () {
      yield* ensureGroup(queue)
      const reader = yield* redis.duplicate.pipe(Effect.mapError(queueFailure("connect consumer")))
      const consumer = `c-${process.pid}-${Math.random().toString(36).slice(2, 10)}`
      return yield* runConsumer(queue, driverFor(streams, queue, reader, consumer), handler, options?.concurrency ?? 8)
    })

  // Handled entries are deleted with their ack, so the stream's length is what is not yet handled.
  const depth = Effect.fn("Queues.depth")(function* (queue: QueueName) {
    return yield* Effect.tryPromise({
      try: () => client.xlen(streamOf(queue)),
      catch: queueFailure("count queued messages")
    })
  })

  return Queues.of({ send, consume, depth, deadLetters: deadLetters(streams, ensureGroup) })
})

export const layerRedis = (settings: QueueSettings & { readonly prefix?: string | undefined }) =>
  Layer.effect(Queues, makeRedisQueues({ ...settings, prefix: settings.prefix ?? "" }))
