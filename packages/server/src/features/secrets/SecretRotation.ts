/**
 * Master-key rotation (docs/interface.md: Secret-rotation procedure 4-7, Errors 7): runs in the
 * background in resumable batches, one at a time for the whole instance.
 *
 * - A dry run opens every envelope of every sealed column and writes nothing but its own
 *   report: `remaining` is the number of envelopes not under the active key, `processed_secrets`
 *   stays 0, and each envelope no key of the ring opens counts in `failed_secrets`.
 * - A real run re-seals every envelope not under the active key. A batch's swaps and the run's
 *   progress commit together (`SecretRotationRepo.commitBatch`), so a run interrupted by a crash
 *   resumes after its last committed batch, and a fresh run skips what is already rotated.
 *   An unreadable envelope stops it (docs/interface.md: Errors 7, "the run must not proceed"):
 *   before writing anything it checks that the ring holds a key of every version present, and a
 *   batch with an envelope that still does not open ends the run without committing that batch.
 * - Either ends SUCCEEDED only with `failed_secrets` 0 (and, for a real run, nothing remaining
 *   under an older key); otherwise FAILED.
 *
 * Every server runs a worker: it takes a queued run at once when this process created it, and
 * otherwise looks every `pollInterval` for a queued run or one whose worker died (its lease
 * expired). The `bosun secrets rotate` command runs the same worker in its own process. A worker
 * works only on runs created under its own active key (version and fingerprint): a process
 * deployed with another key fails the run rather than re-seal under a key the others lack.
 */

import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import type { SecretRotationRun } from "@bosun/domain"
import { Context, Data, type Duration, Effect, Layer, Option, Queue } from "effect"
import { placeOf, SealedColumns } from "../../platform/crypto/SealedColumns.ts"
import { Secrets, SecretsError } from "../../platform/crypto/Secrets.ts"
import type { AuditEvent } from "../../platform/db/AuditLog.ts"
import { type LeaseLost, type RotationRow, SecretRotationRepo } from "./SecretRotationRepo.ts"

/** A rotation of the other kind (dry or real) is queued or running. */
export class RotationConflict extends Data.TaggedError("RotationConflict")<{ readonly running: SecretRotationRun }> {}

export interface SecretRotationSettings {
  /** A run whose worker has not renewed its lease for this long is taken over. */
  readonly lease: Duration.Duration
  /** How often an idle worker looks for queued or abandoned runs. */
  readonly pollInterval: Duration.Duration
  /** The worker starts once this succeeds (the server passes "migrations applied"). */
  readonly ready?: Effect.Effect<void> | undefined
  /** Whether this process works on runs (false: it only queues and reads them). Default true. */
  readonly worker?: boolean | undefined
}

/**
 * The audit evidence of a run an operator queued — with the bootstrap token or `bosun secrets
 * rotate` alike; a call that only joined the run in progress records nothing.
 */
export const rotationStartEvent = (run: SecretRotationRun): AuditEvent => ({
  organizationId: null,
  actor: { kind: "operator" },
  action: run.dry_run ? "secret_rotation.dry_run" : "secret_rotation.start",
  target: `secret_rotation:${run.id}`,
  details: { batch_size: run.batch_size, target_key_version: run.target_key_version }
})

const publicRun = ({
  target_key_fingerprint: _f,
  cursor_column: _c,
  cursor_row_id: _r,
  ...run
}: RotationRow): SecretRotationRun => run

/** What a worker of this process works with: the repository, the key ring, its lease owner name. */
interface RotationWorker {
  readonly repo: SecretRotationRepo["Service"]
  readonly secrets: Secrets["Service"]
  readonly owner: string
  readonly settings: SecretRotationSettings
}

const logUnreadable = (run: RotationRow, unreadable: ReadonlyArray<SecretsError>) =>
  Effect.forEach(
    unreadable,
    (error) =>
      Effect.logWarning("secret_rotation_unreadable_envelope").pipe(
        Effect.annotateLogs({
          rotation_id: run.id,
          table: error.place.table,
          column: error.place.column,
          row_id: error.place.rowId,
          reason: error.reason,
          key_version: error.keyVersion ?? null
        })
      ),
    { discard: true }
  )

/**
 * Re-seals (or, in a dry run, checks) one column from the run's cursor on. Returns how many
 * unreadable envelopes stopped a real run (0: the column is done).
 */
const processColumn = ({ repo, secrets, owner, settings }: RotationWorker, run: RotationRow, columnIndex: number) =>
  Effect.gen(function* () {
    const column = SealedColumns[columnIndex]
    if (column === undefined) return { stopped: 0 }
    let afterId = columnIndex === run.cursor_column ? run.cursor_row_id : null
    while (true) {
      const rows = yield* repo.readBatch(
        column,
        afterId,
        run.batch_size,
        run.dry_run ? undefined : run.target_key_version
      )
      if (rows.length === 0) return { stopped: 0 }
      const swaps: Array<{ id: string; old: Uint8Array; next: Uint8Array }> = []
      const unreadable: Array<SecretsError> = []
      for (const row of rows) {
        const place = placeOf(column, row.id)
        const result = run.dry_run
          ? secrets.checkUnsafe(row.envelope, place)
          : secrets.resealUnsafe(row.envelope, place)
        if (result instanceof SecretsError) unreadable.push(result)
        else if (result !== undefined) swaps.push({ id: row.id, old: row.envelope, next: result })
      }
      if (!run.dry_run && unreadable.length > 0) {
        // Nothing of this batch is written: the run stops here (see the module header).
        yield* logUnreadable(run, unreadable)
        return { stopped: unreadable.length }
      }
      afterId = rows[rows.length - 1]?.id ?? afterId
      yield* repo.commitBatch(
        column,
        swaps,
        { runId: run.id, owner, cursorColumn: columnIndex, cursorRowId: afterId, failed: unreadable.length },
        settings.lease
      )
      yield* logUnreadable(run, unreadable)
      if (rows.length < run.batch_size) return { stopped: 0 }
    }
  })

/**
 * Fails a run created by a process with another active key: re-sealing here would seal under a
 * key the run does not name, which the other servers may not hold.
 */
const failForeignKey = ({ repo, secrets, owner }: RotationWorker, run: RotationRow) =>
  Effect.gen(function* () {
    const counts = yield* repo.count(SealedColumns, run.target_key_version)
    return yield* repo.finish(run.id, owner, {
      status: "FAILED",
      remaining: counts.notUnder,
      error:
        run.target_key_version !== secrets.activeVersion
          ? `this run targets key version ${run.target_key_version} but a worker's active version is ${secrets.activeVersion}; deploy one key ring everywhere, then start a new rotation`
          : `a worker's active key of version ${secrets.activeVersion} is not the key this run was created with; deploy one key ring everywhere, then start a new rotation`
    })
  })

/**
 * Before a real run writes anything: when some envelopes are sealed under a version the ring
 * lacks, fails the run and answers true.
 */
const refusedForMissingKeys = ({ repo, secrets, owner }: RotationWorker, run: RotationRow, remaining: number) =>
  Effect.gen(function* () {
    const census = yield* repo.versions(SealedColumns)
    const missing = [...census].filter(([version]) => !secrets.hasKey(version))
    if (missing.length === 0) return false
    const unreadable = missing.reduce((sum, [, n]) => sum + n, 0)
    const versions = missing.map(([version]) => version).join(", ")
    yield* Effect.logWarning("secret_rotation_refused").pipe(
      Effect.annotateLogs({ rotation_id: run.id, unreadable, missing_key_versions: versions })
    )
    yield* repo.finish(run.id, owner, {
      status: "FAILED",
      remaining,
      addFailed: unreadable,
      error: `${unreadable} envelope(s) are sealed under key version(s) ${versions}, which the ring does not hold: restore them in BOSUN_PREVIOUS_MASTER_KEYS; nothing was re-sealed`
    })
    return true
  })

/** Ends the run once its columns are walked: `stopped` envelopes did not open in a real run. */
const finishRun = ({ repo, owner }: RotationWorker, run: RotationRow, stopped: number) =>
  Effect.gen(function* () {
    const after = yield* repo.count(SealedColumns, run.target_key_version)
    const failed =
      stopped +
      Option.match(yield* repo.find(run.id), {
        onNone: () => 0,
        onSome: (current) => current.failed_secrets
      })
    const succeeded = failed === 0 && (run.dry_run || after.notUnder === 0)
    yield* repo.finish(run.id, owner, {
      status: succeeded ? "SUCCEEDED" : "FAILED",
      remaining: after.notUnder,
      addFailed: stopped,
      error: succeeded
        ? null
        : stopped > 0
          ? `${stopped} envelope(s) did not open (tampered with, or sealed under another key of the same version); the run stopped there`
          : failed > 0
            ? `${failed} envelope(s) did not open with any key of the ring: restore the missing key in BOSUN_PREVIOUS_MASTER_KEYS`
            : `${after.notUnder} envelope(s) are still under an older key`
    })
    yield* Effect.logInfo("secret_rotation_finished").pipe(
      Effect.annotateLogs({
        rotation_id: run.id,
        dry_run: run.dry_run,
        status: succeeded ? "SUCCEEDED" : "FAILED",
        failed_secrets: failed,
        remaining: after.notUnder
      })
    )
  })

const processRun = (worker: RotationWorker, run: RotationRow): Effect.Effect<void, LeaseLost> =>
  Effect.gen(function* () {
    const { repo, secrets, owner } = worker
    if (run.target_key_version !== secrets.activeVersion || run.target_key_fingerprint !== secrets.activeFingerprint) {
      return yield* failForeignKey(worker, run)
    }
    const before = yield* repo.count(SealedColumns, run.target_key_version)
    yield* repo.begin(run.id, owner, { total: before.total, remaining: before.notUnder })
    // Refuse before writing anything when some envelopes cannot be opened at all.
    if (!run.dry_run && (yield* refusedForMissingKeys(worker, run, before.notUnder))) return
    yield* Effect.logInfo("secret_rotation_started").pipe(
      Effect.annotateLogs({
        rotation_id: run.id,
        dry_run: run.dry_run,
        total_secrets: before.total,
        remaining: before.notUnder,
        resumed_at_column: run.cursor_column
      })
    )
    let stopped = 0
    for (let index = run.cursor_column; index < SealedColumns.length && stopped === 0; index++) {
      stopped = (yield* processColumn(worker, run, index)).stopped
    }
    yield* finishRun(worker, run, stopped)
  }).pipe(Effect.withSpan("SecretRotation.process", { attributes: { rotation_id: run.id } }))

/** Works on claimable runs until none is left: what the worker does on each wake-up. */
const drain = (worker: RotationWorker): Effect.Effect<void> =>
  Effect.gen(function* () {
    while (true) {
      const claimed = yield* worker.repo.claim(worker.owner, worker.settings.lease)
      if (Option.isNone(claimed)) return
      yield* processRun(worker, claimed.value).pipe(
        Effect.onInterrupt(() => worker.repo.release(claimed.value.id, worker.owner)),
        Effect.catchTag("LeaseLost", () =>
          Effect.logWarning("secret_rotation_lease_lost").pipe(Effect.annotateLogs({ rotation_id: claimed.value.id }))
        )
      )
    }
  })

export class SecretRotation extends Context.Service<
  SecretRotation,
  {
    /** Queues a run, or returns the queued or running one when it is of the same kind. */
    readonly start: (request: {
      readonly dryRun: boolean
      readonly batchSize: number
    }) => Effect.Effect<{ readonly run: SecretRotationRun; readonly created: boolean }, RotationConflict>
    readonly get: (id: string) => Effect.Effect<Option.Option<SecretRotationRun>>
  }
>()("bosun/server/crypto/SecretRotation") {
  static readonly layer = (settings: SecretRotationSettings) =>
    Layer.effect(
      SecretRotation,
      Effect.gen(function* () {
        const repo = yield* SecretRotationRepo
        const secrets = yield* Secrets
        const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`
        const wake = yield* Queue.sliding<void>(1)

        const start = Effect.fn("SecretRotation.start")(function* (request: {
          readonly dryRun: boolean
          readonly batchSize: number
        }) {
          const created = yield* repo
            .create({
              dryRun: request.dryRun,
              batchSize: request.batchSize,
              targetKeyVersion: secrets.activeVersion,
              targetKeyFingerprint: secrets.activeFingerprint
            })
            .pipe(
              Effect.map((run) => ({ run: publicRun(run), created: true })),
              Effect.catchTag("RotationActive", ({ run }) =>
                run.dry_run === request.dryRun
                  ? Effect.succeed({ run: publicRun(run), created: false })
                  : Effect.fail(new RotationConflict({ running: publicRun(run) }))
              )
            )
          if (created.created) yield* Queue.offer(wake, undefined)
          return created
        })

        const get = (id: string) => Effect.map(repo.find(id), Option.map(publicRun))

        // The worker: wakes when this process queues a run, else every pollInterval.
        if (settings.worker === false) return SecretRotation.of({ start, get })
        yield* (settings.ready ?? Effect.void).pipe(
          Effect.andThen(
            Effect.forever(
              drain({ repo, secrets, owner, settings }).pipe(
                Effect.catchCause((cause) =>
                  Effect.logError("secret_rotation_worker_failed").pipe(Effect.annotateLogs({ cause: String(cause) }))
                ),
                Effect.andThen(Effect.race(Queue.take(wake), Effect.sleep(settings.pollInterval)))
              )
            )
          ),
          Effect.forkScoped
        )

        return SecretRotation.of({ start, get })
      })
    )
}
