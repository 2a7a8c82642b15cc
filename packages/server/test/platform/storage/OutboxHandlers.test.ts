/**
 * The handler registries of the outbox consumers: handlers contributed by layers are found by
 * kind, their payload decoded with their Schema first (a payload that does not decode fails with
 * the decoder's words and never reaches the handler), and a kind contributed twice stops the
 * start; the two registries are separate.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option, Schema } from "effect"
import {
  contribute,
  EffectHandlers,
  InboxHandlers,
  type OutboxDelivery,
  outboxHandler
} from "../../../src/platform/storage/OutboxHandlers.ts"

const Greeting = Schema.Struct({ organization_id: Schema.String, count: Schema.Int })
const first: OutboxDelivery = { deliveries: 1, last: false }

describe("outbox handler registries", () => {
  it.effect("finds each contributed handler by kind and hands it the decoded payload and the delivery", () =>
    Effect.gen(function* () {
      const seen: Array<{ readonly kind: string; readonly payload: unknown; readonly delivery: OutboxDelivery }> = []
      const record = (kind: string) => (payload: unknown, delivery: OutboxDelivery) =>
        Effect.sync(() => {
          seen.push({ kind, payload, delivery })
        })
      const greetings = contribute(
        InboxHandlers,
        Effect.succeed([outboxHandler("test.greeting", Greeting, record("test.greeting"))])
      )
      const farewells = contribute(
        InboxHandlers,
        Effect.succeed([outboxHandler("test.farewell", Schema.Struct({ to: Schema.String }), record("test.farewell"))])
      )
      const registry = yield* InboxHandlers.pipe(
        Effect.provide(Layer.merge(greetings, farewells).pipe(Layer.provideMerge(InboxHandlers.layer)))
      )
      const greeting = registry.find("test.greeting")
      const farewell = registry.find("test.farewell")
      assert.isTrue(Option.isSome(greeting) && Option.isSome(farewell))
      assert.isTrue(Option.isNone(registry.find("test.unknown")))
      yield* Option.getOrThrow(greeting).handle({ organization_id: "org-1", count: 2, extra: true }, first)
      yield* Option.getOrThrow(farewell).handle({ to: "org-2" }, { deliveries: 5, last: true })
      assert.deepStrictEqual(seen, [
        { kind: "test.greeting", payload: { organization_id: "org-1", count: 2 }, delivery: first },
        { kind: "test.farewell", payload: { to: "org-2" }, delivery: { deliveries: 5, last: true } }
      ])
    })
  )

  it.effect("fails a payload that does not decode with the decoder's words, without calling the handler", () =>
    Effect.gen(function* () {
      let called = 0
      const handler = outboxHandler("test.greeting", Greeting, () =>
        Effect.sync(() => {
          called++
        })
      )
      const failure = yield* Effect.flip(handler.handle({ organization_id: "org-1", count: "two" }, first))
      assert.strictEqual(called, 0)
      assert.match(failure.message, /^test\.greeting: the payload does not decode: /)
      assert.include(failure.message, "count")
      const missing = yield* Effect.flip(handler.handle(null, first))
      assert.match(missing.message, /^test\.greeting: the payload does not decode: /)
    })
  )

  it.effect("passes the handler's own failure through unchanged", () =>
    Effect.gen(function* () {
      const handler = outboxHandler("test.greeting", Greeting, () => Effect.fail({ message: "GitHub said no" }))
      const failure = yield* Effect.flip(handler.handle({ organization_id: "org-1", count: 1 }, first))
      assert.deepStrictEqual(failure, { message: "GitHub said no" })
    })
  )

  it.effect("stops the start when two handlers claim one kind, naming the queue and the kind", () =>
    Effect.gen(function* () {
      const one = outboxHandler("test.greeting", Greeting, () => Effect.void)
      const exit = yield* EffectHandlers.pipe(
        Effect.provide(
          Layer.merge(
            contribute(EffectHandlers, Effect.succeed([one])),
            contribute(EffectHandlers, Effect.succeed([one]))
          ).pipe(Layer.provideMerge(EffectHandlers.layer))
        ),
        Effect.exit
      )
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        assert.include(
          String(Cause.squash(exit.cause)),
          "bosun-effects: two handlers registered for kind test.greeting"
        )
      }
    })
  )

  it.effect("keeps the inbox's and the effects' handlers apart", () =>
    Effect.gen(function* () {
      const handler = outboxHandler("test.greeting", Greeting, () => Effect.void)
      const layer = contribute(InboxHandlers, Effect.succeed([handler])).pipe(
        Layer.provideMerge(Layer.merge(InboxHandlers.layer, EffectHandlers.layer))
      )
      const [inbox, effects] = yield* Effect.all([InboxHandlers, EffectHandlers]).pipe(Effect.provide(layer))
      assert.isTrue(Option.isSome(inbox.find("test.greeting")))
      assert.isTrue(Option.isNone(effects.find("test.greeting")))
    })
  )
})
