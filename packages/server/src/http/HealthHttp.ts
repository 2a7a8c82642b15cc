/**
 * `/healthz` and `/readyz` (spec: Health endpoints; Errors 4). Readiness waits behind the same
 * migration gate as `/api/*`, then pings the database; it answers 503 only when one of those fails.
 */
import { BosunApi, ErrorCodes, ServiceUnavailable } from "@bosun/domain"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Migrator } from "../persistence/Migrator.ts"
import { group } from "./ApiGroup.ts"

export const HealthHttp = group(
  BosunApi,
  "health",
  Effect.fn(function* (handlers) {
    const migrator = yield* Migrator
    const sql = yield* SqlClient.SqlClient
    const ping = sql`SELECT 1`.pipe(
      Effect.timeout(Duration.seconds(2)),
      Effect.mapError(() => ServiceUnavailable.fromCode(ErrorCodes.databaseUnavailable, "The database did not answer"))
    )
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
      .handle("readyz", () => migrator.gate.pipe(Effect.andThen(ping), Effect.as({ status: "ready" as const })))
  })
)
