/**
 * The `bosun-effects` consumer for GitHub effects made outside a run's publish step (the
 * max_changed_files notice, the check runs of a review; docs/interface.md: What the service
 * does 9): a `github.pr_comment` outbox row names the pull request, the comment and its idempotency
 * key; a `github.check_run` row the commit, the check run and its key (also its external id).
 *
 * Each is made once through `EffectOnce` (recorded, locked, reconciled); a PENDING one (a crash
 * after the call, a redelivered wake-up) is first looked for on GitHub — a comment by the marker
 * its body carries, a check run by its external id. A failure of GitHub fails the message, which
 * the queue retries and finally dead-letters. `EffectsConsumer` routes the rows here by kind.
 */
import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { contribute, EffectHandlers, outboxHandler } from "../../platform/storage/OutboxHandlers.ts"
import { makeEffectOnce } from "../effects/EffectOnce.ts"
import { GitHubPulls } from "./GitHubPulls.ts"

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

/** A check run on a commit in one state: how a review says it started, ended, failed or was superseded. */
export const CheckRun = Schema.Struct({
  organization_id: Schema.String,
  owner: Schema.String,
  name: Schema.String,
  head_sha: Schema.String,
  idempotency_key: Schema.String,
  /** The check run this moves (one per review run); absent: the idempotency key names its own. */
  external_id: Schema.optional(Schema.String),
  check_name: Schema.String,
  /** Absent: the check run is in progress. */
  conclusion: Schema.optional(Schema.Literals(["success", "failure", "neutral", "action_required"])),
  title: Schema.String,
  summary: Schema.String
})
export type CheckRun = typeof CheckRun.Type

export const commentMarker = (key: string) => `<!-- bosun:effect:${key} -->`

export const makeGithubEffectHandlers = Effect.gen(function* () {
  const once = yield* makeEffectOnce
  const sql = yield* SqlClient.SqlClient
  const pulls = yield* GitHubPulls

  const postComment = Effect.fn("GithubEffects.postComment")(function* (comment: typeof PrComment.Type) {
    const pr = {
      organizationId: comment.organization_id,
      repository: { owner: comment.owner, name: comment.name },
      number: comment.number
    }
    const marker = commentMarker(comment.idempotency_key)
    yield* once({
      organizationId: comment.organization_id,
      kind: GITHUB_PR_COMMENT,
      key: comment.idempotency_key,
      request: comment,
      // GitHub is asked first even on a first call: a comment is cheap to look for, and the notice
      // of one head may come from two deliveries racing.
      call: () =>
        Effect.gen(function* () {
          // A PENDING effect may have been posted before a crash: GitHub is asked first.
          const existing = yield* pulls.findComment(pr, marker)
          const id = Option.isSome(existing) ? existing.value : yield* pulls.comment(pr, `${comment.body}\n\n${marker}`)
          return { comment_id: id }
        })
    })
  })

  const createCheckRun = Effect.fn("GithubEffects.createCheckRun")(function* (check: typeof CheckRun.Type) {
    const externalId = check.external_id ?? check.idempotency_key
    yield* once({
      organizationId: check.organization_id,
      kind: GITHUB_CHECK_RUN,
      key: check.idempotency_key,
      request: check,
      // Made within `once`'s transaction: two states of one check run (started, ended) delivered
      // at once take turns on this lock, or both would find none and create two. `checkRun` finds
      // the one it already created by the external id, so a retry makes none.
      call: () =>
        sql`SELECT pg_advisory_xact_lock(hashtext(${`check_run:${check.organization_id}:${externalId}`}))`.pipe(
          Effect.orDie,
          Effect.andThen(
            pulls.checkRun(
              check.organization_id,
              { owner: check.owner, name: check.name },
              {
                name: check.check_name,
                headSha: check.head_sha,
                conclusion: check.conclusion,
                title: check.title,
                summary: check.summary,
                externalId
              }
            )
          ),
          Effect.map((id) => ({ check_run_id: id }))
        )
    })
  })

  return [
    outboxHandler(GITHUB_PR_COMMENT, PrComment, postComment),
    outboxHandler(GITHUB_CHECK_RUN, CheckRun, createCheckRun)
  ]
})

/** Adds these handlers to the `bosun-effects` registry. */
export const GithubEffectHandlersLive = contribute(EffectHandlers, makeGithubEffectHandlers)
