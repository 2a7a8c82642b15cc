/**
 * `POST /api/v1/instance/secret-rotations` and `GET /api/v1/instance/secret-rotations/{id}`
 * (docs/interface.md: Bootstrap-token endpoints, Secret-rotation procedure 4-7).
 *
 * POST answers 202 with the new run, or with the run already in progress when it is of the same
 * kind (dry or real): only one rotation runs at a time. A request of the other kind while one
 * runs is a 409 naming the running id, so a client never polls a run it did not ask for.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Conflict, NotFound } from "../ApiError.ts"
import { PathId } from "../Ids.ts"
import { CreateSecretRotation, SecretRotationRun } from "../SecretRotation.ts"
import { BootstrapAuth } from "./Auth.ts"

export const SecretRotationResponse = Schema.Struct({ data: SecretRotationRun })

export class SecretRotationsApi extends HttpApiGroup.make("secretRotations")
  .add(
    HttpApiEndpoint.post("create", "/instance/secret-rotations", {
      payload: CreateSecretRotation,
      success: SecretRotationResponse.pipe(HttpApiSchema.status(202)),
      error: Conflict
    }),
    HttpApiEndpoint.get("get", "/instance/secret-rotations/:id", {
      params: { id: PathId },
      success: SecretRotationResponse,
      error: NotFound
    })
  )
  .middleware(BootstrapAuth)
  .prefix("/api/v1") {}
