/**
 * The row count of every table of the test database's `public` schema, to show that a refused
 * request wrote nothing: take the counts before, send it, and compare.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Tables whose rows come and go on their own, whatever a request does: the cluster's runner
 * heartbeat and shard locks, rewritten by the runner on a timer, never by a request handler.
 */
const BACKGROUND_TABLES: ReadonlySet<string> = new Set(["cluster_locks", "cluster_runners"])

/** Table name → row count, for every base table of `public` except the background ones. */
export const rowCounts = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql<{ table_name: string }>`
    SELECT table_name FROM information_schema.tables
    WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`
  const counted = tables.filter(({ table_name }) => !BACKGROUND_TABLES.has(table_name))
  if (counted.length === 0) return {}
  // One statement for all tables: a snapshot, and one round trip per comparison.
  const rows = yield* sql.unsafe<{ name: string; n: number }>(
    counted
      .map(({ table_name }) => `SELECT '${table_name}' AS name, count(*)::int AS n FROM public."${table_name}"`)
      .join(" UNION ALL ")
  )
  return Object.fromEntries(rows.map((row) => [row.name, row.n])) as Readonly<Record<string, number>>
}).pipe(Effect.orDie)

/** Runs `effect` and asserts that no table's row count changed across it; answers its result. */
export const writesNothing = <A, E, R>(effect: Effect.Effect<A, E, R>, what: string) =>
  Effect.gen(function* () {
    const before = yield* rowCounts
    const result = yield* effect
    const after = yield* rowCounts
    assert.deepStrictEqual(after, before, `${what}: rows were written`)
    return result
  })
