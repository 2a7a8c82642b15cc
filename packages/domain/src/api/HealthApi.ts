/**
 * Health endpoints at the root of the base URL, outside `/api/v1`
 * (docs/interface.md: Health endpoints). `/healthz` says the process answers HTTP; `/readyz` runs
 * behind the migration gate and pings the database, answering 503 only when that fails.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { ServiceUnavailable } from "../ApiError.ts"

export const HealthStatus = Schema.Struct({
  status: Schema.Literals(["ok", "ready"])
})

export class HealthApi extends HttpApiGroup.make("health").add(
  HttpApiEndpoint.get("healthz", "/healthz", {
    success: HealthStatus
  }),
  HttpApiEndpoint.get("readyz", "/readyz", {
    success: HealthStatus,
    error: ServiceUnavailable
  })
) {}
