/**
 * `npm run bench:rotation`: envelopes re-sealed per second by a real master-key rotation
 * (`SecretRotation`, the same service the server runs) over 100,000 sealed user secrets, beside
 * two baselines taken in the same run on the same rows:
 * - crypto only: open + seal of every envelope in memory, no database;
 * - bare SQL: the rotation's own statements (keyset read of a batch, then one `unnest` compare-
 *   and-swap UPDATE), issued directly with no crypto, no progress row and no lease.
 * It rotates twice, version 1 → 2 with the default batch of 100 and 2 → 3 with the maximum of
 * 200, after a dry run. Writes the figures to `.bench/rotation.json`.
 *
 * Postgres: DATABASE_URL (a fresh database is created in it) or an embedded Postgres.
 * BENCH_ENVELOPES (default 100000).
 */

import { randomBytes } from "node:crypto"
import { SecretRotation } from "@bosun/server/features/secrets/SecretRotation"
import { SecretRotationRepo } from "@bosun/server/features/secrets/SecretRotationRepo"
import { makeKeyRing, Secrets } from "@bosun/server/platform/crypto/Secrets"
import {
  readOrganizationSecrets,
  secretPlace,
  seedOrganizationSecrets
} from "@bosun/server/test/support/SealedFixtures"
import { PgClient } from "@effect/sql-pg"
import { Cause, Context, Duration, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { benchDatabase } from "./BenchDatabase.ts"
import { runContext, writeReport } from "./Report.ts"

const total = Number(process.env.BENCH_ENVELOPES ?? 100_000)
const ORG = "bench-org"

const key = () => randomBytes(32).toString("base64")
const ring = (version: number, active: string, previous: Record<number, string> = {}) =>
  makeKeyRing({
    key: Redacted.make(active),
    version,
    previous: new Map(Object.entries(previous).map(([v, k]) => [Number(v), Redacted.make(k)] as const))
  })

/** One rotation run through the real service, timed from start to its final status. */
const rotate = (
  pgLayer: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError.SqlError>,
  secrets: Secrets["Service"],
  request: { readonly dryRun: boolean; readonly batchSize: number }
) =>
  Effect.gen(function* () {
    const rotation = yield* SecretRotation
    const started = performance.now()
    const { run } = yield* rotation.start(request)
    while (true) {
      const current = Option.getOrThrow(yield* rotation.get(run.id))
      if (current.status === "SUCCEEDED" || current.status === "FAILED") {
        const seconds = (performance.now() - started) / 1000
        const count = request.dryRun ? current.total_secrets : current.processed_secrets
        return { envelopesPerSec: count / seconds, seconds, processed: count, status: current.status }
      }
      yield* Effect.sleep(Duration.millis(20))
    }
  }).pipe(
    Effect.scoped,
    Effect.provide(
      SecretRotation.layer({ lease: Duration.seconds(30), pollInterval: Duration.seconds(1) }).pipe(
        Layer.provideMerge(SecretRotationRepo.layer),
        Layer.provide(Layer.succeed(Secrets, secrets)),
        Layer.provide(pgLayer)
      )
    )
  )

const main = Effect.gen(function* () {
  const scope = yield* Scope.make()
  const db = yield* benchDatabase(scope, { maxConnections: 4 })
  const pgLayer = db.layer
  const pgContext = db.context
  const sql = Context.get(pgContext, PgClient.PgClient)

  const k1 = key()
  const k2 = key()
  const k3 = key()
  const v1 = Secrets.make(ring(1, k1))
  const v2 = Secrets.make(ring(2, k2, { 1: k1 }))
  const v3 = Secrets.make(ring(3, k3, { 1: k1, 2: k2 }))

  const seedStarted = performance.now()
  yield* seedOrganizationSecrets(ORG, total).pipe(Effect.provide(Layer.succeed(Secrets, v1)), Effect.provide(pgContext))
  const seedSeconds = (performance.now() - seedStarted) / 1000

  // Baseline 1: crypto only, every envelope opened and sealed again in memory.
  const rows = yield* readOrganizationSecrets(ORG).pipe(Effect.provide(pgContext))
  const cryptoStarted = performance.now()
  for (const row of rows) {
    const next = v2.resealUnsafe(row.envelope, secretPlace(row.id))
    if (!(next instanceof Uint8Array)) return yield* Effect.die(next)
  }
  const cryptoSeconds = (performance.now() - cryptoStarted) / 1000

  // Baseline 2: the rotation's statements bare, batches of 100, swapping each envelope for
  // itself (the same write volume, and the data stays as seeded for the real runs).
  const sqlStarted = performance.now()
  let after: string | null = null
  let swapped = 0
  while (true) {
    const batch: ReadonlyArray<{ id: string; value: Uint8Array }> = yield* sql<{ id: string; value: Uint8Array }>`
      SELECT id, value FROM organization_secrets
      WHERE ${after === null ? sql`TRUE` : sql`id > ${after}`}
      ORDER BY id LIMIT 100`
    if (batch.length === 0) break
    const done = yield* sql<{ id: string }>`
      UPDATE organization_secrets AS t SET value = v.next
      FROM unnest(${batch.map((r) => r.id)}::text[], ${batch.map((r) => r.value)}::bytea[],
                  ${batch.map((r) => r.value)}::bytea[]) AS v(id, old, next)
      WHERE t.id = v.id AND t.value = v.old RETURNING v.id`
    swapped += done.length
    after = batch[batch.length - 1]?.id ?? after
  }
  const sqlSeconds = (performance.now() - sqlStarted) / 1000

  const dryRun = yield* rotate(pgLayer, v2, { dryRun: true, batchSize: 100 })
  const first = yield* rotate(pgLayer, v2, { dryRun: false, batchSize: 100 })
  const second = yield* rotate(pgLayer, v3, { dryRun: false, batchSize: 200 })

  yield* db.drop
  yield* Scope.close(scope, Exit.void)

  const baselines = {
    cryptoOnly: { envelopesPerSec: rows.length / cryptoSeconds, seconds: cryptoSeconds },
    bareSql: { envelopesPerSec: swapped / sqlSeconds, seconds: sqlSeconds }
  }
  const report = {
    ...runContext("rotation"),
    database: db.database,
    envelopes: total,
    seed: { envelopesPerSec: total / seedSeconds, seconds: seedSeconds },
    baselines,
    runs: { dryRunBatch100: dryRun, rotateBatch100: first, rotateBatch200: second },
    ratioToBareSql: first.envelopesPerSec / baselines.bareSql.envelopesPerSec
  }
  yield* Effect.promise(() => writeReport("rotation", report))

  const n = (x: number, d = 0) => x.toFixed(d).padStart(12)
  console.log(`bench:rotation — ${total} envelopes, ${report.machine.cpus}× ${report.machine.cpu}, ${report.database}`)
  console.log(`${"".padEnd(44)}${"env/s".padStart(12)}${"seconds".padStart(12)}`)
  const line = (name: string, f: { envelopesPerSec: number; seconds: number }) =>
    console.log(`${name.padEnd(44)}${n(f.envelopesPerSec)}${n(f.seconds, 2)}`)
  line("seal + insert (fixtures)", report.seed)
  line("baseline: crypto only (open + seal)", baselines.cryptoOnly)
  line("baseline: bare SQL (read + CAS update, 100)", baselines.bareSql)
  line(`rotation dry run, batch 100 (${dryRun.status})`, dryRun)
  line(`rotation 1→2, batch 100 (${first.status})`, first)
  line(`rotation 2→3, batch 200 (${second.status})`, second)
  console.log(`${"rotation (batch 100) / bare SQL".padEnd(44)}${n(report.ratioToBareSql * 100, 1)} %`)
  console.log("figures written to .bench/rotation.json")
})

Effect.runPromiseExit(Effect.scoped(main)).then((exit) => {
  if (exit._tag === "Failure") console.error(Cause.pretty(exit.cause))
  process.exit(exit._tag === "Success" ? 0 : 1)
})
