/**
 * The `bosun-effects` consumer for GitHub effects made outside a run's publish step (issue 8: the
 * max_changed_files notice, the check run of a review that failed; spec: What the service does
 * 9): a `github.pr_comment` outbox row names the pull request, the comment and its idempotency
 * key; a `github.check_run` row the commit, the check run and its key (also its external id).
 *
 * The effect is recorded PENDING in `provider_effects` before the call, and the call is made with
 * the effect's row locked, so two handlers of one effect (two deliveries for the same head, a
 * report made twice) make it once between them; a PENDING one (a crash after the call, a
 * redelivered wake-up) is first looked for on GitHub — a comment by the marker its body carries,
 * a check run by its external id — so it is made once.
 * A failure of GitHub fails the message, which the queue retries and finally dead-letters.
 */
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Migrator } from "../persistence/Migrator.ts"
import { ProviderEffectsRepo } from "../persistence/ProviderEffectsRepo.ts"
import { GitHubPulls } from "../providers/GitHubPulls.ts"
import { Outbox } from "../storage/Outbox.ts"
import { Queues } from "../storage/Queue.ts"

export const GITHUB_PR_COMMENT = "github.pr_comment"

const PrComment = Schema.Struct({
  organization_id: Schema.String,
  owner: Schema.String,
  name: Schema.String,
  number: Schema.Int,
  idempotency_key: Schema.String,
  body: Schema.String
})

export const GITHUB_CHECK_RUN = "github.check_run"

/** A completed check run on a commit: how a review that failed says so on the pull request. */
export const CheckRun = Schema.Struct({
  organization_id: Schema.String,
  owner: Schema.String,
  name: Schema.String,
  head_sha: Schema.String,
  idempotency_key: Schema.String,
  check_name: Schema.String,
  conclusion: Schema.Literals(["success", "failure", "neutral", "action_required"]),
  title: Schema.String,
  summary: Schema.String
})
export type CheckRun = typeof CheckRun.Type

export const commentMarker = (key: string) => `<!-- bosun:effect:${key} -->`

export const GithubEffectsLive = Layer.effectDiscard(
  Effect.gen(function* () {
    const queues = yield* Queues
    const outbox = yield* Outbox
    const migrator = yield* Migrator
    const sql = yield* SqlClient.SqlClient
    const effects = yield* ProviderEffectsRepo
    const pulls = yield* GitHubPulls

    /**
     * Makes the effect `key` once: recorded PENDING before the call, made with its row locked (two
     * handlers of one effect make it once between them), `call` answering what GitHub returned.
     */
    const once = <E extends { readonly message: string }>(
      org: string,
      kind: string,
      key: string,
      request: Readonly<Record<string, unknown>>,
      call: Effect.Effect<Readonly<Record<string, unknown>>, E>
    ) =>
      Effect.gen(function* () {
        yield* effects
          .begin({ organizationId: org, runId: null, kind, idempotencyKey: key, request })
          .pipe(Effect.provideService(SqlClient.SqlClient, sql))
        yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const recorded = yield* effects.lock(org, key)
              if (Option.isSome(recorded) && recorded.value.status === "SUCCEEDED") return
              yield* effects.attempted(org, key)
              yield* effects.succeed(org, key, yield* call)
            })
          )
          .pipe(
            Effect.provideService(SqlClient.SqlClient, sql),
            // The transaction's own count rolled back with it: the failed call is counted after.
            Effect.tapError((error) => effects.failedAttempt(org, key, error.message))
          )
      })

    const postComment = Effect.fn("GithubEffects.postComment")(function* (payload: unknown) {
      const comment = yield* Schema.decodeUnknownEffect(PrComment)(payload).pipe(Effect.orDie)
      const pr = {
        organizationId: comment.organization_id,
        repository: { owner: comment.owner, name: comment.name },
        number: comment.number
      }
      const marker = commentMarker(comment.idempotency_key)
      yield* once(
        comment.organization_id,
        GITHUB_PR_COMMENT,
        comment.idempotency_key,
        comment,
        Effect.gen(function* () {
          // A PENDING effect may have been posted before a crash: GitHub is asked first.
          const existing = yield* pulls.findComment(pr, marker)
          const id = Option.isSome(existing) ? existing.value : yield* pulls.comment(pr, `${comment.body}\n\n${marker}`)
          return { comment_id: id }
        })
      )
    })

    const createCheckRun = Effect.fn("GithubEffects.createCheckRun")(function* (payload: unknown) {
      const check = yield* Schema.decodeUnknownEffect(CheckRun)(payload).pipe(Effect.orDie)
      yield* once(
        check.organization_id,
        GITHUB_CHECK_RUN,
        check.idempotency_key,
        check,
        // `checkRun` finds the one it already created by the external id, so a retry makes none.
        Effect.map(
          pulls.checkRun(
            check.organization_id,
            { owner: check.owner, name: check.name },
            {
              name: check.check_name,
              headSha: check.head_sha,
              conclusion: check.conclusion,
              title: check.title,
              summary: check.summary,
              externalId: check.idempotency_key
            }
          ),
          (id) => ({ check_run_id: id })
        )
      )
    })

    yield* migrator.awaitReady.pipe(
      Effect.andThen(
        queues.consume("bosun-effects", (message) =>
          outbox.handle(message, (row) =>
            row.kind === GITHUB_PR_COMMENT
              ? postComment(row.payload)
              : row.kind === GITHUB_CHECK_RUN
                ? createCheckRun(row.payload)
                : Effect.die(new Error(`bosun-effects has no handler for kind ${row.kind}`))
          )
        )
      ),
      Effect.forkScoped
    )
  })
)
