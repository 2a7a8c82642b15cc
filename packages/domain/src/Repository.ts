/**
 * A repository of an organization (docs/interface.md: Resources "Repository"): reviews run on it
 * while it is `enabled`; `available` turns false when the GitHub App loses access;
 * `readiness_status` is the sandbox-readiness check's verdict.
 */
import { Schema } from "effect"

export const ReadinessStatus = Schema.Literals(["NOT_RUN", "READY", "WARNING", "BLOCKING"])
export type ReadinessStatus = typeof ReadinessStatus.Type

export const Repository = Schema.Struct({
  available: Schema.Boolean,
  default_branch: Schema.String,
  enabled: Schema.Boolean,
  id: Schema.String,
  name: Schema.String,
  owner: Schema.String,
  readiness_status: ReadinessStatus
})
export type Repository = typeof Repository.Type

/** `PATCH .../repositories/{repository_id}`: enables or pauses reviews. */
export const RepositoryUpdate = Schema.Struct({ enabled: Schema.Boolean })
