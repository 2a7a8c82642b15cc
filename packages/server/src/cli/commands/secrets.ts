/**
 * `bosun secrets rotate [--dry-run] [--batch-size N]` and `bosun secrets status ID`
 * (docs/interface.md: Secret-rotation procedure 4-7). They use the server's own services on the
 * same database, so a rotation started here is the same run the HTTP endpoints report; this process
 * also works on it (a running server may take part), and `rotate` polls it to the end, drawing its
 * progress. `rotate` prints the final report as JSON on stdout and exits 0 only when it SUCCEEDED.
 * A run it queues is audit evidence, as one queued over HTTP is.
 */
import { BatchSize, DEFAULT_BATCH_SIZE, type SecretRotationRun } from "@bosun/domain"
import { Console, Duration, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { rotationStartEvent, SecretRotation } from "../../features/secrets/SecretRotation.ts"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { CliFailure } from "../CliFailure.ts"
import { makeProgress } from "../Progress.ts"

const isFinished = (run: SecretRotationRun) => run.status === "SUCCEEDED" || run.status === "FAILED"

const report = (run: SecretRotationRun) => Console.log(JSON.stringify(run, null, 2))

export const rotate = Command.make(
  "rotate",
  {
    dryRun: Flag.Boolean("dry-run").pipe(
      Flag.withDescription("Open every envelope and write nothing"),
      Flag.withDefault(false)
    ),
    batchSize: Flag.Int("batch-size").pipe(
      Flag.withSchema(BatchSize),
      Flag.withDescription("Envelopes per batch, 1..200"),
      Flag.withDefault(DEFAULT_BATCH_SIZE)
    )
  },
  Effect.fn(function* ({ dryRun, batchSize }) {
    const rotation = yield* SecretRotation
    const audit = yield* AuditLog
    const { run, created } = yield* rotation.start({ dryRun, batchSize }).pipe(
      Effect.catchTag("RotationConflict", ({ running }) =>
        Effect.fail(
          new CliFailure({
            message: `rotation ${running.id} (${running.dry_run ? "a dry run" : "a real run"}) is ${running.status}; wait for it to finish`
          })
        )
      )
    )
    if (created) yield* audit.record(rotationStartEvent(run))
    process.stderr.write(
      `${created ? "started" : "following the rotation already in progress:"} ${run.id} (${run.dry_run ? "dry run" : "re-sealing"} under key version ${run.target_key_version})\n`
    )
    const progress = makeProgress(process.stderr)
    let current = run
    while (!isFinished(current)) {
      progress.update(current)
      yield* Effect.sleep(Duration.millis(200))
      current = Option.getOrElse(yield* rotation.get(run.id), () => current)
    }
    progress.done(current)
    yield* report(current)
    if (current.status !== "SUCCEEDED") {
      return yield* new CliFailure({
        message: `FAILED: ${
          current.error ??
          (current.failed_secrets > 0
            ? `${current.failed_secrets} envelope(s) did not open; restore the missing key in BOSUN_PREVIOUS_MASTER_KEYS`
            : `${current.remaining} envelope(s) remain under an older key`)
        }`
      })
    }
  })
).pipe(Command.withDescription("Re-seal every secret under the active master key (or check them with --dry-run)"))

export const status = Command.make(
  "status",
  { id: Argument.String("id").pipe(Argument.withDescription("The rotation id")) },
  Effect.fn(function* ({ id }) {
    const rotation = yield* SecretRotation
    const run = yield* rotation.get(id)
    if (Option.isNone(run)) return yield* new CliFailure({ message: `no secret rotation has the id ${id}` })
    yield* report(run.value)
  })
).pipe(Command.withDescription("Print a rotation run"))
