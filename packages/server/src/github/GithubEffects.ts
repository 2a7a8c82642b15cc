/**
 * The `bosun-effects` consumer for GitHub effects that no run carries (issue 8: the
 * max_changed_files notice; spec: What the service does 9): a `github.pr_comment` outbox row
 * names the pull request, the comment and its idempotency key. The effect is recorded PENDING in
 * `provider_effects` before the call, and the call is made with the effect's row locked, so two
 * handlers of one effect (two deliveries for the same head) make it once between them; a PENDING
 * one (a crash after posting, a redelivered wake-up) is first looked for on GitHub by the marker
 * its body carries, so the comment is posted once.
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

export const commentMarker = (key: string) => `<!-- bosun:effect:${key} -->`

export const GithubEffectsLive = Layer.effectDiscard(
  Effect.gen(function* () {
    const queues = yield* Queues
    const outbox = yield* Outbox
    const migrator = yield* Migrator
    const sql = yield* SqlClient.SqlClient
    const effects = yield* ProviderEffectsRepo
    const pulls = yield* GitHubPulls

    const postComment = Effect.fn("GithubEffects.postComment")(function* (payload: unknown) {
      const comment = yield* Schema.decodeUnknownEffect(PrComment)(payload).pipe(Effect.orDie)
      const org = comment.organization_id
      const key = comment.idempotency_key
      yield* effects
        .begin({ organizationId: org, runId: null, kind: GITHUB_PR_COMMENT, idempotencyKey: key, request: comment })
        .pipe(Effect.provideService(SqlClient.SqlClient, sql))
      // The row stays locked while GitHub is asked and answered: two handlers of one effect (two
      // deliveries for the same head, a redelivered wake-up) post it once between them.
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const recorded = yield* effects.lock(org, key)
            if (Option.isSome(recorded) && recorded.value.status === "SUCCEEDED") return
            yield* effects.attempted(org, key)
            const pr = {
              organizationId: org,
              repository: { owner: comment.owner, name: comment.name },
              number: comment.number
            }
            const marker = commentMarker(key)
            const existing = yield* pulls.findComment(pr, marker)
            const id = Option.isSome(existing)
              ? existing.value
              : yield* pulls.comment(pr, `${comment.body}\n\n${marker}`)
            yield* effects.succeed(org, key, { comment_id: id })
          })
        )
        .pipe(
          Effect.provideService(SqlClient.SqlClient, sql),
          // The transaction's own count rolled back with it: the failed call is counted after.
          Effect.tapError((error) => effects.failedAttempt(org, key, error.message))
        )
    })

    yield* migrator.awaitReady.pipe(
      Effect.andThen(
        queues.consume("bosun-effects", (message) =>
          outbox.handle(message, (row) =>
            row.kind === GITHUB_PR_COMMENT
              ? postComment(row.payload)
              : Effect.die(new Error(`bosun-effects has no handler for kind ${row.kind}`))
          )
        )
      ),
      Effect.forkScoped
    )
  })
)
