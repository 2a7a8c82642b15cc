/**
 * `GET /api/v1/instance`: the name and version of this instance; `GET /api/v1/schemas/bosun-config.json`:
 * the JSON Schema of `.bosun.yaml`.
 */
import { BosunApi, bosunConfigJsonSchema } from "@bosun/domain"
import { Effect, Option } from "effect"
import { AppConfig } from "../platform/config/AppConfig.ts"
import { group } from "../platform/http/ApiGroup.ts"
import { BOSUN_VERSION } from "../platform/Version.ts"

export const InstanceHttp = group(
  BosunApi,
  "instance",
  Effect.fn(function* (handlers) {
    const { sandboxes } = yield* AppConfig
    const info = {
      data: {
        name: "bosun" as const,
        version: BOSUN_VERSION,
        api_version: "v1" as const,
        sandbox_providers: [
          "EXTERNAL_RUNTIME" as const,
          ...(Option.isSome(sandboxes.hostedSandbox) ? ["HOSTED_SANDBOX" as const] : []),
          ...(Option.isSome(sandboxes.platformContainer) ? ["PLATFORM_CONTAINER" as const] : [])
        ]
      }
    }
    const schema = bosunConfigJsonSchema as Record<string, unknown>
    return handlers.handle("info", () => Effect.succeed(info)).handle("bosunConfigSchema", () => Effect.succeed(schema))
  })
)
