/**
 * The `push` step of the GitHub inbox: a push to the repository's default branch records the
 * branch and its new head, which deep scans pin to. Other branches, tags and deleted branches
 * change nothing; deep scans themselves are not this module's.
 */
import { Effect, Schema } from "effect"
import type { GithubDelivery } from "./GithubDeliveriesRepo.ts"
import { PushEvent } from "./GithubEvents.ts"
import { applied, decodeFailure, type Handled, type InboxContext, ignored, repositoryOf } from "./GithubInboxContext.ts"

const applyPush = Effect.fnUntraced(function* (
  ctx: InboxContext,
  delivery: GithubDelivery,
  event: PushEvent
): Effect.fn.Return<Handled> {
  const branch = event.repository.default_branch
  if (event.ref !== `refs/heads/${branch}`)
    return ignored(`a push to ${event.ref}, not to the default branch ${branch}`)
  if (event.deleted) return ignored(`the push deleted the default branch ${branch}`)
  const org = delivery.organizationId
  const repository = yield* repositoryOf(ctx, org, event.repository)
  const pushedAt = event.repository.pushed_at
  // A push older than the one recorded changes nothing: deliveries may arrive out of order.
  const recorded = yield* ctx.repositories.setDefaultBranchHead(org, repository.id, {
    branch,
    sha: event.after,
    pushedAt:
      pushedAt === undefined || pushedAt === null
        ? null
        : new Date(typeof pushedAt === "number" ? pushedAt * 1000 : pushedAt)
  })
  return recorded ? applied(false) : ignored(`a newer push to ${branch} is already recorded`)
})

export const handlePush = (ctx: InboxContext, delivery: GithubDelivery) =>
  Schema.decodeUnknownEffect(PushEvent)(delivery.payload).pipe(
    Effect.flatMap((event) => applyPush(ctx, delivery, event)),
    Effect.catchTag("SchemaError", decodeFailure("push"))
  )
