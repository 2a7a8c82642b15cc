/**
 * `storableEventData` against real Postgres, written the way the attempt writes event batches (a
 * multi-row INSERT of JSON text into a `jsonb` column): raw NUL or a lone surrogate fails the whole
 * batch, while the storable form of anything at all is accepted, reads back as what was written,
 * and clean data reads back as itself.
 */
import { TestDatabase } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Predicate } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import fc from "fast-check"
import { storableEventData } from "../src/events/StorableEvent.ts"

const Database = Layer.effectDiscard(
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`CREATE TABLE events (seq int PRIMARY KEY, batch int NOT NULL, data jsonb NOT NULL)`
  )
).pipe(Layer.provideMerge(TestDatabase.layer))

const sqlstate = (error: SqlError.SqlError): unknown => {
  const cause = error.reason.cause
  return Predicate.hasProperty(cause, "code") ? cause.code : undefined
}

/** Code units weighted towards NUL, both surrogate halves, backslash and `u`. */
const unit = fc
  .oneof(
    { weight: 4, arbitrary: fc.integer({ min: 0, max: 0xffff }) },
    { weight: 3, arbitrary: fc.constantFrom(0, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0x5c, 0x75, 0x30, 0x22, 0x1f) }
  )
  .map((code) => String.fromCharCode(code))

const nastyString = fc.oneof(fc.string({ unit, maxLength: 16 }), fc.string({ unit: "binary", maxLength: 16 }))

const anything = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.anything({
      key: nastyString,
      stringUnit: unit,
      maxDepth: 4,
      withBigInt: true,
      withBoxedValues: true,
      withDate: true,
      withMap: true,
      withSet: true,
      withNullPrototype: true,
      withSparseArray: true
    })
  },
  // Now and then an event too large to store whole.
  {
    weight: 1,
    arbitrary: fc.dictionary(
      fc.string({ maxLength: 8 }),
      fc.oneof(fc.string({ unit, minLength: 20_000, maxLength: 60_000 }), fc.string({ maxLength: 10 })),
      { minKeys: 1, maxKeys: 5 }
    )
  }
)

layer(Database, { excludeTestServices: true, timeout: "120 seconds" })("storableEventData in Postgres", (it) => {
  it.effect("raw NUL or a lone surrogate fails the whole batch; their storable forms are written", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const batch = (id: number, [first, ...rest]: readonly [unknown, ...Array<unknown>]) => {
        const row = (data: unknown, index: number) => ({ seq: id * 10 + index, batch: id, data: JSON.stringify(data) })
        return sql`INSERT INTO events ${sql.insert([row(first, 0), ...rest.map((data, index) => row(data, index + 1))])}`
      }
      const nul = { line: "a\u0000b" }
      const lone = { line: "half \ud83d of a face" }
      assert.strictEqual(sqlstate(yield* Effect.flip(batch(1, [{ ok: true }, nul]))), "22P05")
      assert.strictEqual(sqlstate(yield* Effect.flip(batch(2, [{ ok: true }, lone]))), "22P02")
      const [before] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE batch IN (1, 2)`
      assert.strictEqual(before?.n, 0)

      yield* batch(3, [{ ok: true }, storableEventData(nul), storableEventData(lone)])
      const rows = yield* sql<{ data: string }>`SELECT data::text AS data FROM events WHERE batch = 3 ORDER BY seq`
      assert.deepStrictEqual(
        rows.map((row) => JSON.parse(row.data)),
        [{ ok: true }, { line: "a\\u0000b" }, { line: "half \\ud83d of a face" }]
      )
    })
  )

  it.effect("accepts the storable form of anything and reads it back as written", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      let seq = 1_000
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(anything, (data) => {
            const stored = JSON.stringify(storableEventData(data))
            const id = seq++
            return Effect.runPromise(
              Effect.gen(function* () {
                yield* sql`INSERT INTO events ${sql.insert({ seq: id, batch: 4, data: stored })}`
                const [row] = yield* sql<{ data: string }>`SELECT data::text AS data FROM events WHERE seq = ${id}`
                assert.deepStrictEqual(JSON.parse(row?.data ?? "undefined"), JSON.parse(stored))
              })
            )
          }),
          { numRuns: 200 }
        )
      )
    })
  )

  it.effect("stores clean data untouched: the same object goes in and equal JSON comes out", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      let seq = 100_000
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(fc.jsonValue({ stringUnit: "grapheme", maxDepth: 5 }), (data) => {
            const storable = storableEventData(data)
            assert.strictEqual(storable, data)
            const id = seq++
            return Effect.runPromise(
              Effect.gen(function* () {
                yield* sql`INSERT INTO events ${sql.insert({ seq: id, batch: 5, data: JSON.stringify(storable) })}`
                const [row] = yield* sql<{ data: string }>`SELECT data::text AS data FROM events WHERE seq = ${id}`
                // Through JSON, as the input would be read back from any JSON store: -0 becomes 0.
                assert.deepStrictEqual(JSON.parse(row?.data ?? "undefined"), JSON.parse(JSON.stringify(data)))
              })
            )
          }),
          { numRuns: 200 }
        )
      )
    })
  )
})
