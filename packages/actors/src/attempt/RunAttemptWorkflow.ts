/**
 * RunAttemptWorkflow (docs/interface.md: What the service does 9; States and transitions 3;
 * Design rules): one durable workflow per attempt, instance id `runId:attempt` (its idempotency
 * key; the engine's execution id is derived from it). Its steps are activities, in order:
 *
 * | step | does | result kept by the engine |
 * | --- | --- | --- |
 * | prepare | passes the migration gate; when an earlier attempt's agent succeeded, takes its kept outputs and goes straight to publish; else builds the run request (the workflow type's port) and seals it into `runs/{run}/{attempt}/request.enc` | the blob key and the sandbox choice, or the kept result |
 * | acquire-sandbox | the provider's acquire (idempotent by attempt) | provider and sandbox id |
 * | execute/N | starts the run on the runtime (idempotent), tails its events from the attempt's committed cursor for at most one chunk, flushing them every 1 s or 100 events (the run's end at once), then publishing them to RunEvents; once the run's end is committed, only reads the run's state; a SUCCEEDED run's outputs (those the workflow type declares) are kept in the blob store (`RunOutputs`) | finished or not; the final runtime state |
 * | publish | the workflow type's publish of the kept outputs, for a SUCCEEDED run (idempotent by run) | - |
 * | finish-attempt | the attempt's outcome and the run's usage; a run's last failed attempt is reported through its workflow type (`reportFailure`) | - |
 * | release-sandbox | always, after a failure or a cancel too | - |
 * | notify-scheduler | wakes the Scheduler, which settles the job | - |
 *
 * A completed step is replayed from the engine's storage, never re-run; the one cut off by a
 * crash runs again, so each is idempotent, and `workflow_attempt_steps.executions` counts how
 * often a body ran. Transient failures (a runtime or provider that does not answer) are retried
 * inside the step with backoff; what remains ends the attempt, retryable or not. Cancellation is
 * cooperative: each step checks the job's cancel request, and execute asks the runtime to stop
 * the agent, then tails it to its end. Every attempt-row write is fenced on the attempt still
 * running, so an attempt the Scheduler recovered by lease expiry cannot write after it. Only a
 * failure before the agent's outputs are kept runs the agent again: a publish that failed
 * retryably is retried by a new attempt that publishes what was kept. Every failed step logs one
 * line with the provider's own words (warn while it may be retried, error when it ends the run, and
 * error for a flush of events the database refused, which a new attempt may still get past).
 */
import { type AttemptStep, RunState } from "@bosun/domain"
import { Effect, Option, type Result, Schedule, Schema, Stream } from "effect"
import { Activity, Workflow } from "effect/workflow"
import { RunEvents } from "../events/RunEvents.ts"
import { RuntimeClient, type RuntimeConnection, type RuntimeError, type TailLine } from "../runtime/RuntimeClient.ts"
import type { SandboxError, SandboxProviderName, SandboxProviderShape } from "../sandbox/SandboxProvider.ts"
import { wakeScheduler } from "../scheduler/SchedulerEntity.ts"
import { recordAttemptFailure } from "./AttemptMetrics.ts"
import {
  type AttemptError,
  type AttemptRun,
  MigrationGate,
  RunOutputs,
  SandboxProviders,
  SealedRequests,
  WorkflowTypes
} from "./AttemptPorts.ts"
import * as Records from "./AttemptRecords.ts"
import { AttemptSettings } from "./AttemptSettings.ts"
import { leadingBatches } from "./LeadingBatches.ts"

export class StepFailure extends Schema.TaggedError<StepFailure>()("StepFailure", {
  code: Schema.String,
  message: Schema.String,
  retryable: Schema.Boolean,
  provider: Schema.optional(Schema.String),
  status: Schema.optional(Schema.Number)
}) {}

export const RunAttemptWorkflow = Workflow.make("RunAttempt", {
  payload: { organizationId: Schema.String, runId: Schema.String, attempt: Schema.Int },
  idempotencyKey: (payload) => `${payload.runId}:${payload.attempt}`
})

const SandboxName = Schema.Literals(["EXTERNAL_RUNTIME", "HOSTED_SANDBOX", "PLATFORM_CONTAINER"])

const Prepared = Schema.Struct({
  requestKey: Schema.String,
  provider: SandboxName,
  instanceClass: Schema.Literals(["standard-2", "standard-4"]),
  egressTier: Schema.Literals(["STRICT", "BUILD", "DEEP_SCAN"]),
  agent: Schema.Literals(["OPENCODE", "AGENT_ONE", "CUSTOM"])
})
type Prepared = typeof Prepared.Type

/** What prepare found: a run to start, or an earlier attempt's kept outputs, only to publish. */
const PrepareOutcome = Schema.Struct({ prepared: Schema.NullOr(Prepared), kept: Schema.NullOr(RunState) })
type PrepareOutcome = typeof PrepareOutcome.Type

/**
 * Prepare's result as the engine keeps it: an attempt journaled before kept outputs existed has
 * a bare `Prepared`, read as a run to start.
 */
const JournaledPrepare = Schema.Union([PrepareOutcome, Prepared])
const outcomeOf = (journaled: typeof JournaledPrepare.Type): PrepareOutcome =>
  "requestKey" in journaled ? { prepared: journaled, kept: null } : journaled

const Acquired = Schema.Struct({ provider: SandboxName, id: Schema.String })

const Executed = Schema.Struct({ finished: Schema.Boolean, result: Schema.NullOr(RunState) })

const fromAttemptError = (error: AttemptError) =>
  new StepFailure({
    code: error.code,
    message: error.message,
    retryable: error.retryable,
    ...(error.provider === undefined ? {} : { provider: error.provider }),
    ...(error.status === undefined ? {} : { status: error.status })
  })

const fromSandboxError = (error: SandboxError) =>
  new StepFailure({
    code: error.reason === "Unavailable" ? "sandbox_unavailable" : "sandbox_refused",
    message: error.message,
    retryable: error.reason !== "Refused"
  })

const fromRuntimeError = (error: RuntimeError) =>
  new StepFailure({
    code: `runtime_${error.reason.toLowerCase()}`,
    message: error.message,
    retryable: error.reason === "Unavailable" || error.reason === "Busy"
  })

const cancelled = () => new StepFailure({ code: "cancelled", message: "the run was cancelled", retryable: false })

/** A flush fenced out by another worker of the same, still running attempt (see `fencedOut`). */
const CURSOR_MOVED = "attempt_cursor_moved"

/**
 * The run's events could not be written for a reason other than a fence: not an outage to wait
 * out inside the step, but the attempt fails at once (retryable) and the line says so at error.
 */
const EVENT_FLUSH_FAILED = "event_flush_failed"

/** Transient failures are retried inside the step with backoff; what is left ends the attempt. */
const transient = (failure: StepFailure) =>
  failure.retryable &&
  (failure.code === "sandbox_unavailable" || failure.code === CURSOR_MOVED || failure.code.startsWith("runtime_"))

/** One log line for a failed step: what failed, where, and the provider's own words. */
const logStepFailure = (run: AttemptRun, name: AttemptStep, failure: StepFailure, retrying: boolean) =>
  (retrying || (failure.retryable && failure.code !== EVENT_FLUSH_FAILED) ? Effect.logWarning : Effect.logError)(
    retrying ? "attempt_step_retrying" : "attempt_step_failed"
  ).pipe(
    Effect.annotateLogs({
      run_id: run.runId,
      attempt: run.attempt,
      step: name,
      code: failure.code,
      retryable: failure.retryable,
      ...(failure.provider === undefined ? {} : { provider: failure.provider }),
      ...(failure.status === undefined ? {} : { http_status: failure.status }),
      error: failure.message
    })
  )

/**
 * Runs a step's body: counted in `workflow_attempt_steps`, the attempt's lease renewed while it
 * runs, transient failures retried with backoff, the outcome recorded. Every failure logs one
 * line: warn while it is retried (here, or by a later attempt), error when it ends the run's hope.
 */
const step = <A, E, R>(run: AttemptRun, name: AttemptStep, body: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const settings = yield* AttemptSettings
    yield* Records.stepStarted(run.attemptId, name)
    const renew = Effect.repeat(
      Effect.delay(Records.heartbeat(run.attemptId), settings.heartbeatInterval),
      Schedule.forever
    )
    const outcome = yield* body.pipe(
      Effect.tapError((error) =>
        error instanceof StepFailure && transient(error) ? logStepFailure(run, name, error, true) : Effect.void
      ),
      Effect.retry({
        schedule: Schedule.exponential(settings.stepRetryBase),
        times: settings.stepRetries,
        while: (error) => error instanceof StepFailure && transient(error)
      }),
      Effect.raceFirst(Effect.andThen(renew, Effect.never)),
      Effect.exit
    )
    if (outcome._tag === "Failure") {
      for (const reason of outcome.cause.reasons) {
        if (reason._tag === "Fail" && reason.error instanceof StepFailure && reason.error.code !== "cancelled") {
          yield* logStepFailure(run, name, reason.error, false)
        }
      }
    }
    yield* Records.stepFinished(
      run.attemptId,
      name,
      outcome._tag === "Success"
        ? null
        : outcome.cause.reasons
            .map((reason) =>
              reason._tag === "Fail" && reason.error instanceof StepFailure ? reason.error.message : reason._tag
            )
            .join("; ")
    )
    return yield* outcome
  }).pipe(Effect.withSpan(`RunAttempt.step.${name}`, { attributes: { attempt_id: run.attemptId } }))

const providerOf = (name: SandboxProviderName) =>
  Effect.flatMap(SandboxProviders, (providers) => {
    const provider = providers.get(name)
    return provider === undefined
      ? Effect.fail(
          new StepFailure({
            code: "sandbox_provider_unconfigured",
            message: `the sandbox provider ${name} is not configured on this instance`,
            retryable: false
          })
        )
      : Effect.succeed(provider)
  })

/** The attempt's runtime: the provider's acquire again (idempotent), with the sealed request. */
const connect = (run: AttemptRun, prepared: Prepared) =>
  Effect.gen(function* () {
    const sealed = yield* Effect.mapError(
      Effect.flatMap(SealedRequests, (requests) => requests.read(run, prepared.requestKey)),
      fromAttemptError
    )
    const provider: SandboxProviderShape = yield* providerOf(prepared.provider)
    const sandbox = yield* provider
      .acquire({
        organizationId: run.organizationId,
        runId: run.runId,
        attemptId: run.attemptId,
        instanceClass: prepared.instanceClass,
        egressTier: prepared.egressTier,
        agent: prepared.agent,
        grants: sealed.grants
      })
      .pipe(Effect.mapError(fromSandboxError))
    const client = yield* RuntimeClient
    return {
      sandbox,
      connection: client.connect(sandbox.endpoint),
      request: { ...sealed.request, credential_mode: sandbox.credentialMode }
    }
  })

const checkCancel = (run: AttemptRun) =>
  Effect.flatMap(Records.cancelRequested(run), (requested) => (requested ? Effect.fail(cancelled()) : Effect.void))

/** One execute chunk: start (idempotent), tail from the committed cursor, flush, publish. */
const executeChunk = (run: AttemptRun, prepared: Prepared) =>
  Effect.gen(function* () {
    const settings = yield* AttemptSettings
    const current = yield* Records.loadAttempt(run.organizationId, run.runId, run.attempt)
    if (Option.isNone(current) || current.value.status !== "RUNNING") {
      // Recovered by the Scheduler meanwhile: this worker stops here.
      return { finished: true, result: null }
    }
    const { connection, request } = yield* connect(run, prepared)
    if (current.value.endCommitted) {
      // A worker that died after committing the run's end but before the step's result was kept:
      // the tail after the cursor is empty for good, so the run's state is read at once.
      const result = yield* connection.result(run.attemptId).pipe(Effect.mapError(fromRuntimeError))
      yield* keepOutputs(run, connection, result)
      return { finished: true, result }
    }
    yield* connection.start(request).pipe(Effect.mapError(fromRuntimeError))
    const runEvents = yield* RunEvents.client
    const publisher = runEvents(run.runId)
    let cursor = current.value.runtimeCursor
    let finished = false
    let cancelSent = false

    const flush = (lines: ReadonlyArray<TailLine>) =>
      Effect.gen(function* () {
        const events = lines.flatMap((line) => ("seq" in line ? [line] : []))
        const phase = lines.findLast((line) => "phase" in line)
        if (events.some((event) => event.type === "run.finished")) finished = true
        if (events.length > 0) {
          const written = yield* Records.flushEvents(run, cursor, events).pipe(
            Effect.mapError(
              (error) =>
                new StepFailure({
                  code: EVENT_FLUSH_FAILED,
                  message: `the database refused the run's events: ${error.message}`,
                  retryable: true
                })
            )
          )
          if (written === undefined) return yield* Effect.fail(yield* fencedOut(run))
          cursor = events[events.length - 1]?.seq ?? cursor
          yield* publisher.Publish({ events: written }, { discard: true }).pipe(Effect.ignore)
        } else if (phase !== undefined && "phase" in phase) {
          const alive = yield* Records.heartbeat(run.attemptId, phase.phase.toLowerCase())
          if (!alive) return yield* Effect.fail(stale())
        }
        if (!cancelSent && (yield* Records.cancelRequested(run))) {
          cancelSent = true
          yield* connection.cancel(run.attemptId).pipe(Effect.mapError(fromRuntimeError))
        }
      })

    yield* connection.events(run.attemptId, cursor).pipe(
      Stream.mapError(fromRuntimeError),
      Stream.interruptWhen(Effect.sleep(settings.executeChunk)),
      // The run's end is written and fanned out at once, not at the end of the flush interval.
      leadingBatches(settings.flushMaxEvents, settings.flushInterval, {
        final: (line) => "seq" in line && line.type === "run.finished"
      }),
      Stream.runForEach(flush)
    )
    if (!finished) return { finished: false, result: null }
    const result = yield* connection.result(run.attemptId).pipe(Effect.mapError(fromRuntimeError))
    yield* keepOutputs(run, connection, result)
    return { finished: true, result }
  })

/**
 * When the agent succeeded: the files the workflow type publishes from, copied from the runtime
 * into the blob store with the result (the end of execute), so a publish retried by a later
 * attempt needs neither the agent nor its sandbox.
 */
const keepOutputs = (run: AttemptRun, connection: RuntimeConnection, result: RunState) =>
  Effect.gen(function* () {
    if (result.status !== "SUCCEEDED") return
    const type = (yield* WorkflowTypes).get(run.workflowType)
    const files = yield* Effect.forEach(type?.outputs ?? [], (path) =>
      connection.file(run.attemptId, path).pipe(
        Effect.map((bytes): Uint8Array | null => bytes),
        Effect.catchIf(
          (error) => error.reason === "NotFound",
          () => Effect.succeed(null)
        ),
        Effect.mapError(fromRuntimeError),
        Effect.map((bytes) => ({ path, bytes }))
      )
    )
    yield* Effect.mapError(
      Effect.flatMap(RunOutputs, (outputs) => outputs.keep(run, result, files)),
      fromAttemptError
    )
  })

const stale = () =>
  new StepFailure({
    code: "attempt_superseded",
    message: "the attempt was recovered by the Scheduler; this worker stopped",
    retryable: false
  })

/**
 * Why a flush was fenced out. The attempt no longer running: it was recovered, this worker stops.
 * Still running: another worker of this same attempt wrote first — during a graceful hand-over the
 * stopping runner's execute step can still be flushing while the new owner resumes it — so the
 * chunk starts again from the committed cursor (a transient failure, retried in the step); the
 * fence keeps every event written once whoever writes it.
 */
const fencedOut = (run: AttemptRun) =>
  Effect.map(Records.loadAttempt(run.organizationId, run.runId, run.attempt), (current) =>
    Option.isSome(current) && current.value.status === "RUNNING"
      ? new StepFailure({
          code: CURSOR_MOVED,
          message: "another worker of this attempt wrote its events first; resuming from the committed cursor",
          retryable: true
        })
      : stale()
  )

/**
 * Prepare's body: the migration gate, then an earlier attempt's kept outputs (only to publish),
 * else the workflow type's run request, sealed into the blob store.
 */
const prepareAttempt = (run: AttemptRun) =>
  Effect.gen(function* () {
    yield* Effect.flatMap(MigrationGate, (gate) => gate.awaitReady)
    yield* checkCancel(run)
    const type = (yield* WorkflowTypes).get(run.workflowType)
    if (type === undefined) {
      return yield* new StepFailure({
        code: "unknown_workflow_type",
        message: `no workflow type ${run.workflowType} is registered`,
        retryable: false
      })
    }
    // An earlier attempt's agent succeeded and its outputs were kept: only publish is left.
    const kept = yield* Effect.mapError(
      Effect.flatMap(RunOutputs, (outputs) => outputs.kept(run)),
      fromAttemptError
    )
    if (Option.isSome(kept)) {
      yield* Effect.logInfo("attempt_publishes_kept_outputs").pipe(
        Effect.annotateLogs({ run_id: run.runId, attempt: run.attempt, agent_attempt: kept.value.attempt })
      )
      return { prepared: null, kept: kept.value.result }
    }
    const made = yield* Effect.mapError(type.prepare(run), fromAttemptError)
    const requestKey = yield* Effect.mapError(
      Effect.flatMap(SealedRequests, (requests) => requests.write(run, { request: made.request, grants: made.grants })),
      fromAttemptError
    )
    yield* Records.recordPrepared(run, { requestKey, model: made.model, provider: made.provider })
    return {
      prepared: {
        requestKey,
        provider: made.sandbox.provider,
        instanceClass: made.sandbox.instanceClass,
        egressTier: made.sandbox.egressTier,
        agent: made.request.agent.kind
      },
      kept: null
    }
  })

/** The publish step: the workflow type's publish of the kept outputs. */
const publishStep = (run: AttemptRun, result: RunState) =>
  Activity.make({
    name: "publish",
    error: StepFailure,
    execute: step(
      run,
      "publish",
      Effect.gen(function* () {
        const type = (yield* WorkflowTypes).get(run.workflowType)
        if (type === undefined) return
        const outputs = yield* RunOutputs
        yield* Effect.mapError(type.publish({ run, result, file: (path) => outputs.read(run, path) }), fromAttemptError)
      })
    )
  })

/**
 * From what prepare found to the run's final state: publish the kept outputs, or acquire the
 * sandbox, execute chunk by chunk until the run ends, and publish a run that succeeded.
 */
const runToEnd = (run: AttemptRun, prepared: Result.Result<typeof JournaledPrepare.Type, StepFailure>) =>
  Effect.gen(function* () {
    if (prepared._tag === "Failure") return yield* prepared.failure
    const { kept, prepared: ready } = outcomeOf(prepared.success)
    if (kept !== null) {
      yield* publishStep(run, kept)
      return kept
    }
    if (ready === null) return yield* Effect.die(new Error("prepare answered neither a run nor kept outputs"))
    yield* Activity.make({
      name: "acquire-sandbox",
      success: Acquired,
      error: StepFailure,
      execute: step(
        run,
        "acquire-sandbox",
        Effect.gen(function* () {
          yield* checkCancel(run)
          const { sandbox } = yield* connect(run, ready)
          yield* Records.recordSandbox(run, { provider: sandbox.provider, id: sandbox.id })
          return { provider: sandbox.provider, id: sandbox.id }
        })
      )
    })
    for (let chunk = 1; ; chunk++) {
      const executed = yield* Activity.make({
        name: `execute/${chunk}`,
        success: Executed,
        error: StepFailure,
        execute: step(run, "execute", executeChunk(run, ready))
      })
      if (!executed.finished) continue
      if (executed.result === null) return yield* stale()
      const result = executed.result
      if (result.status === "SUCCEEDED") yield* publishStep(run, result)
      return result
    }
  })

/** The attempt's outcome, from the run's final state or the step failure that ended it. */
const attemptOutcomeOf = (ended: Result.Result<RunState, StepFailure>): Records.AttemptOutcome =>
  ended._tag === "Success"
    ? {
        status: ended.success.status === "RUNNING" ? "FAILED" : ended.success.status,
        retryable: ended.success.retryable,
        exitReason:
          ended.success.status === "SUCCEEDED"
            ? "succeeded"
            : ended.success.status === "CANCELLED"
              ? "cancelled"
              : (ended.success.error?.code ?? "agent_failed"),
        error: ended.success.error,
        // Publishing kept outputs, the agent's usage is the earlier attempt's, which ended
        // failed (at publish) and recorded none: it is counted here, once.
        usage: ended.success.usage
      }
    : {
        status: ended.failure.code === "cancelled" ? "CANCELLED" : "FAILED",
        retryable: ended.failure.retryable,
        exitReason: ended.failure.code,
        error: { code: ended.failure.code, message: ended.failure.message },
        usage: null
      }

/**
 * Finish-attempt's body: a run's last failed attempt reported through its workflow type, then
 * the attempt's outcome recorded and a failure counted.
 */
const finishAttempt = (run: AttemptRun, outcome: Records.AttemptOutcome) =>
  Effect.gen(function* () {
    // Reported before the attempt ends, so a crash in between reports again (the report is
    // keyed by the run) rather than not at all; an attempt no longer running reports nothing.
    const context =
      outcome.status === "FAILED" && outcome.error !== null
        ? yield* Records.failureContext(run, outcome.retryable)
        : Option.none()
    if (outcome.status === "FAILED" && outcome.error !== null) {
      const report = (yield* WorkflowTypes).get(run.workflowType)?.reportFailure
      if (report !== undefined && Option.isSome(context) && context.value.final) {
        yield* report({
          run,
          error: outcome.error,
          step: context.value.step,
          attempts: run.attempt,
          model: context.value.model,
          provider: context.value.provider
        }).pipe(
          // A report that could not be recorded must not keep the attempt from ending.
          Effect.catch((error) =>
            Effect.logError("failure_report_failed").pipe(
              Effect.annotateLogs({ run_id: run.runId, code: error.code, error: error.message })
            )
          )
        )
      }
    }
    const ended = yield* Records.finishAttempt(run, outcome)
    // Counted by the finish that ended the attempt, so a replayed activity counts it once.
    if (ended && outcome.status === "FAILED") {
      yield* recordAttemptFailure(
        Option.match(context, { onNone: () => "execute", onSome: (c) => c.step }),
        outcome.error?.code ?? "unknown"
      )
    }
  })

/** Release-sandbox's body: the sandbox the attempt recorded, if it acquired one. */
const releaseSandbox = (run: AttemptRun, acquired: Prepared | null) =>
  Effect.gen(function* () {
    if (acquired === null) return
    const current = yield* Records.loadAttempt(run.organizationId, run.runId, run.attempt)
    const sandboxId = Option.getOrUndefined(current)?.sandboxId
    if (sandboxId === null || sandboxId === undefined) return
    const provider = yield* providerOf(acquired.provider)
    yield* provider.release({ id: sandboxId, provider: acquired.provider }).pipe(Effect.mapError(fromSandboxError))
  })

export const RunAttemptWorkflowLive = RunAttemptWorkflow.toLayer(
  // One span for the attempt and one per activity and step beneath it, each carrying the run's
  // correlation ids (docs/operations.md: Traces).
  Effect.fn("RunAttempt")(
    function* (payload) {
      const loaded = yield* Records.loadAttempt(payload.organizationId, payload.runId, payload.attempt)
      if (Option.isNone(loaded)) return yield* Effect.logWarning("run_attempt_missing", payload)
      const run = loaded.value.run

      const prepared = yield* Activity.make({
        name: "prepare",
        success: JournaledPrepare,
        error: StepFailure,
        execute: step(run, "prepare", prepareAttempt(run))
      }).pipe(Effect.result)
      /** The sandbox this attempt acquired (none when it only publishes kept outputs). */
      const sandboxOf = prepared._tag === "Success" ? outcomeOf(prepared.success).prepared : null

      const outcome = attemptOutcomeOf(yield* Effect.result(runToEnd(run, prepared)))

      yield* Activity.make({
        name: "finish-attempt",
        execute: step(run, "finish-attempt", finishAttempt(run, outcome))
      })
      yield* Activity.make({
        name: "release-sandbox",
        error: StepFailure,
        execute: step(run, "release-sandbox", releaseSandbox(run, sandboxOf))
      }).pipe(Effect.catch((failure) => Effect.logError("sandbox_release_failed", failure.message)))
      yield* Activity.make({ name: "notify-scheduler", execute: step(run, "notify-scheduler", wakeScheduler) })
    },
    (effect, payload) =>
      Effect.annotateSpans(Effect.withSpan(effect, "RunAttempt.attempt"), {
        "bosun.run_id": payload.runId,
        "bosun.org_id": payload.organizationId,
        "bosun.attempt": payload.attempt
      })
  )
)
