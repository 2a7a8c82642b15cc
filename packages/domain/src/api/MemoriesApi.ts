/**
 * Memories of an organization (docs/interface.md: Organization endpoints):
 * `PATCH .../memories/{memory_id}` `{enabled}` on an approved memory (ADMIN or above; 409 when not
 * approved); the list and `GET .../memories/{memory_id}` serve the dashboard, for members. `POST
 * .../memories/{memory_id}/decision {decision: approve|reject}` (ADMIN or above) decides a PROPOSED
 * memory once (409 `memory_already_decided` after).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Conflict, Forbidden, NotFound } from "../ApiError.ts"
import { PathId } from "../Ids.ts"
import { Memory, MemoryDecision, MemoryToggle } from "../Memory.ts"
import { SessionAuth } from "./Auth.ts"

export class MemoriesApi extends HttpApiGroup.make("memories")
  .add(
    HttpApiEndpoint.get("list", "/organizations/:organization_id/memories", {
      params: { organization_id: PathId },
      success: Schema.Struct({ data: Schema.Array(Memory) }),
      error: NotFound
    }),
    HttpApiEndpoint.get("get", "/organizations/:organization_id/memories/:memory_id", {
      params: { organization_id: PathId, memory_id: PathId },
      success: Schema.Struct({ data: Memory }),
      error: NotFound
    }),
    HttpApiEndpoint.patch("toggle", "/organizations/:organization_id/memories/:memory_id", {
      params: { organization_id: PathId, memory_id: PathId },
      payload: MemoryToggle,
      success: Schema.Struct({ data: Memory }),
      error: [NotFound, Forbidden, Conflict]
    }),
    HttpApiEndpoint.post("decide", "/organizations/:organization_id/memories/:memory_id/decision", {
      params: { organization_id: PathId, memory_id: PathId },
      payload: MemoryDecision,
      success: Schema.Struct({ data: Memory }),
      error: [NotFound, Forbidden, Conflict]
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}
