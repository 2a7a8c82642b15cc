/**
 * `GET /api/v1/instance`: the name and version of this instance.
 */
import { BosunApi } from "@bosun/domain"
import { Effect } from "effect"
import { BOSUN_VERSION } from "../Version.ts"
import { group } from "./ApiGroup.ts"

export const InstanceHttp = group(
  BosunApi,
  "instance",
  Effect.fn(function* (handlers) {
    const info = { data: { name: "bosun" as const, version: BOSUN_VERSION, api_version: "v1" as const } }
    return handlers.handle("info", () => Effect.succeed(info))
  })
)
