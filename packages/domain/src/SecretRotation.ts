/**
 * Master-key rotation runs (docs/interface.md: Bootstrap-token endpoints,
 * Secret-rotation procedure, Limits).
 *
 * `remaining` counts the envelopes not yet sealed under the active key version: before a
 * rotation every envelope is under an older key, so a dry run then reports remaining =
 * total_secrets (procedure 4); after it, the verification dry run reports 0 (procedure 7).
 */
import { Schema } from "effect"

export const SecretRotationStatus = Schema.Literals(["QUEUED", "RUNNING", "SUCCEEDED", "FAILED"])
export type SecretRotationStatus = typeof SecretRotationStatus.Type

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

export const SecretRotationRun = Schema.Struct({
  id: Schema.String,
  status: SecretRotationStatus,
  dry_run: Schema.Boolean,
  batch_size: Schema.Int,
  /** The key version every envelope is being (or would be) sealed under. */
  target_key_version: Schema.Int,
  total_secrets: Count,
  processed_secrets: Count,
  remaining: Count,
  failed_secrets: Count,
  /** Why the run FAILED (never a secret); null otherwise. */
  error: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String)
})
export type SecretRotationRun = typeof SecretRotationRun.Type

export const BatchSize = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 200 }))

export const DEFAULT_BATCH_SIZE = 100

export const CreateSecretRotation = Schema.Struct({
  dry_run: Schema.Boolean,
  batch_size: Schema.optionalKey(BatchSize)
})
export type CreateSecretRotation = typeof CreateSecretRotation.Type
