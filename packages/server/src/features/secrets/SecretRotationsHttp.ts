/**
 * `POST /api/v1/instance/secret-rotations` and `GET /api/v1/instance/secret-rotations/{id}`
 * (docs/interface.md: Bootstrap-token endpoints). POST only queues the run; the rotation worker does it.
 */
import { BosunApi, Conflict, DEFAULT_BATCH_SIZE, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option } from "effect"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { rotationStartEvent, SecretRotation } from "./SecretRotation.ts"

export const SecretRotationsHttp = group(
  BosunApi,
  "secretRotations",
  Effect.fn(function* (handlers) {
    const rotation = yield* SecretRotation
    const audit = yield* AuditLog
    return handlers
      .handle("create", ({ payload }) =>
        rotation.start({ dryRun: payload.dry_run, batchSize: payload.batch_size ?? DEFAULT_BATCH_SIZE }).pipe(
          Effect.tap(({ run, created }) => (created ? audit.record(rotationStartEvent(run)) : Effect.void)),
          Effect.map(({ run }) => ({ data: run })),
          Effect.catchTag("RotationConflict", ({ running }) =>
            Effect.fail(
              Conflict.fromCode(
                ErrorCodes.rotationInProgress,
                `Rotation ${running.id} (${running.dry_run ? "a dry run" : "a real run"}) is ${running.status}; only one rotation runs at a time`
              )
            )
          )
        )
      )
      .handle("get", ({ params }) =>
        Effect.flatMap(rotation.get(params.id), (run) =>
          Option.match(run, {
            onNone: () => Effect.fail(NotFound.fromCode(ErrorCodes.notFound, "No secret rotation has this id")),
            onSome: (found) => Effect.succeed({ data: found })
          })
        )
      )
  })
)
