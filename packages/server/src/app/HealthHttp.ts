/**
 * `/healthz` and `/readyz` (docs/interface.md: Health endpoints; Errors 4). Readiness waits behind the same
 * migration gate as `/api/*`, then pings the database; it answers 503 only when one of those fails.
 * Every role serves them: the whole API (`HealthHttp`) and a runner-only process (`RunnerHealthHttp`).
 */
import { BosunApi, ErrorCodes, RunnerApi, ServiceUnavailable } from "@bosun/domain"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Migrator } from "../platform/db/Migrator.ts"
import { group } from "../platform/http/ApiGroup.ts"

const probes = Effect.gen(function* () {
  const migrator = yield* Migrator
  const sql = yield* SqlClient.SqlClient
  const ping = sql`SELECT 1`.pipe(
    Effect.timeout(Duration.seconds(2)),
    Effect.mapError(() => ServiceUnavailable.fromCode(ErrorCodes.databaseUnavailable, "The database did not answer"))
  )
  return {
    healthz: () => Effect.succeed({ status: "ok" as const }),
    readyz: () => migrator.gate.pipe(Effect.andThen(ping), Effect.as({ status: "ready" as const }))
  }
})

export const HealthHttp = group(
  BosunApi,
  "health",
  Effect.fn(function* (handlers) {
    const { healthz, readyz } = yield* probes
    return handlers.handle("healthz", healthz).handle("readyz", readyz)
  })
)

export const RunnerHealthHttp = group(
  RunnerApi,
  "health",
  Effect.fn(function* (handlers) {
    const { healthz, readyz } = yield* probes
    return handlers.handle("healthz", healthz).handle("readyz", readyz)
  })
)
