/**
 * What `RunAttemptWorkflow` needs from the rest of Bosun, as ports the server provides
 * (docs/interface.md: Design rules, dependencies point down — actors know nothing of HTTP handlers,
 * repositories of resources or the sealing keys):
 *
 * - `WorkflowTypes`: per `workflow_type` (catalog_discovery, review, deep_scan, ...), how an
 *   attempt's run request is built (prepare) and what its result becomes (publish). Publishing
 *   must be idempotent by attempt id: a publish step cut off mid-way runs again.
 * - `SealedRequests`: seals the run request — with the credentials the egress proxy may inject —
 *   and keeps it in the blob store at `runs/{run}/{attempt}/request.enc`; only the key travels
 *   between steps (docs/interface.md: What the service does 7).
 * - `RunOutputs`: the files of a run whose agent succeeded (the ones its workflow type publishes
 *   from), kept in the blob store by run with the runtime's result, so a publish retried by a later
 *   attempt reads them there and never runs the agent again.
 * - `SandboxProviders`: the providers this instance has configured, by name.
 * - `MigrationGate`: the Migrator's gate, the first thing every attempt passes.
 */
import type { AttemptStep, Lane, RunRequest, RunState } from "@bosun/domain"
import { Context, Data, type Effect, type Option } from "effect"
import type { InjectionGrant } from "../sandbox/InjectionProxy.ts"
import type { InstanceClass, SandboxProviderName, SandboxProviderShape } from "../sandbox/SandboxProvider.ts"

/** The run as the steps see it (no secrets). */
export interface AttemptRun {
  readonly organizationId: string
  readonly runId: string
  readonly attempt: number
  readonly attemptId: string
  readonly workflowType: string
  readonly repositoryId: string | null
  readonly headSha: string | null
  readonly baseSha: string | null
  readonly pullRequestNumber: number | null
  readonly inputSnapshot: Readonly<Record<string, unknown>>
}

export interface SandboxChoice {
  readonly provider: SandboxProviderName
  readonly instanceClass: InstanceClass
  readonly egressTier: RunRequest["egress_tier"]
}

export interface PreparedAttempt {
  /** `credential_mode` is set by the workflow from the provider; whatever is here is replaced. */
  readonly request: RunRequest
  readonly sandbox: SandboxChoice
  /** INJECTED mode: the real values behind the request's placeholders, per host. */
  readonly grants: ReadonlyArray<InjectionGrant>
  /** Shown on the run: the model and provider the attempt uses. */
  readonly model: string | null
  readonly provider: string | null
}

/**
 * A step's failure. `retryable: false` ends the attempt at once (and the run, whatever attempts
 * are left); `true` ends the attempt as retryable, so the Scheduler tries a new one.
 */
export class AttemptError extends Data.TaggedError("AttemptError")<{
  readonly code: string
  /** The provider's own words where a provider failed (never a secret). */
  readonly message: string
  readonly retryable: boolean
  /** The outside service that failed (`github`, `slack`, ...), where one did. */
  readonly provider?: string | undefined
  /** That provider's HTTP status, where it answered. */
  readonly status?: number | undefined
}> {}

export interface PublishInput {
  readonly run: AttemptRun
  readonly result: RunState
  /** A file of the ended run (`changes.diff`, `outputs/...`, `artifacts/...`), from its runtime. */
  readonly file: (path: string) => Effect.Effect<Uint8Array, AttemptError>
}

/** A run's last attempt failed: what the workflow type may report where its work came from. */
export interface FailureReport {
  readonly run: AttemptRun
  readonly error: { readonly code: string; readonly message: string }
  /** The step that failed (`execute` when the agent itself failed). */
  readonly step: AttemptStep
  readonly attempts: number
  readonly model: string | null
  readonly provider: string | null
}

export interface WorkflowType {
  readonly lane: Lane
  /**
   * The files of the ended run that `publish` reads (`outputs/review.json`, `changes.diff`, ...):
   * kept when the agent succeeds, so a retried publish needs neither the agent nor its sandbox.
   */
  readonly outputs: ReadonlyArray<string>
  readonly prepare: (run: AttemptRun) => Effect.Effect<PreparedAttempt, AttemptError>
  /** Runs only for a SUCCEEDED runtime result; the attempt fails with what it fails with. */
  readonly publish: (input: PublishInput) => Effect.Effect<void, AttemptError>
  /**
   * Runs in finish-attempt when the run will not be tried again (not for a cancellation). It may
   * run twice for one run (finish-attempt cut off and re-run), so what it records is keyed by the
   * run; it should only record the report durably (an outbox row), not call a provider inline.
   */
  readonly reportFailure?: (report: FailureReport) => Effect.Effect<void, AttemptError>
}

export class WorkflowTypes extends Context.Service<
  WorkflowTypes,
  { readonly get: (workflowType: string) => WorkflowType | undefined }
>()("bosun/actors/WorkflowTypes") {}

export interface SealedAttempt {
  readonly request: RunRequest
  readonly grants: ReadonlyArray<InjectionGrant>
}

export class SealedRequests extends Context.Service<
  SealedRequests,
  {
    /** Seals and stores the attempt's request; answers the blob key. Writing it twice is harmless. */
    readonly write: (run: AttemptRun, sealed: SealedAttempt) => Effect.Effect<string, AttemptError>
    readonly read: (run: AttemptRun, key: string) => Effect.Effect<SealedAttempt, AttemptError>
  }
>()("bosun/actors/SealedRequests") {}

/** A run's kept outputs: the attempt whose agent made them, its result, and the files. */
export interface KeptOutputs {
  readonly attempt: number
  readonly result: RunState
}

export class RunOutputs extends Context.Service<
  RunOutputs,
  {
    /**
     * Keeps `files` (a missing one as absent) and the result, by run; the result is written last,
     * so a run with a kept result has all its files. Keeping them twice is harmless.
     */
    readonly keep: (
      run: AttemptRun,
      result: RunState,
      files: ReadonlyArray<{ readonly path: string; readonly bytes: Uint8Array | null }>
    ) => Effect.Effect<void, AttemptError>
    /** The run's kept result, if an earlier attempt's agent succeeded. */
    readonly kept: (run: AttemptRun) => Effect.Effect<Option.Option<KeptOutputs>, AttemptError>
    /** A kept file; `output_missing` (not retryable) when the agent did not write it. */
    readonly read: (run: AttemptRun, path: string) => Effect.Effect<Uint8Array, AttemptError>
  }
>()("bosun/actors/RunOutputs") {}

export class SandboxProviders extends Context.Service<
  SandboxProviders,
  { readonly get: (name: SandboxProviderName) => SandboxProviderShape | undefined }
>()("bosun/actors/SandboxProviders") {}

export class MigrationGate extends Context.Service<MigrationGate, { readonly awaitReady: Effect.Effect<void> }>()(
  "bosun/actors/MigrationGate"
) {}
