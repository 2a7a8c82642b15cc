/**
 * The `installation` and `installation_repositories` steps of the GitHub inbox: linking the
 * organization to the installation's account (only the one the operator set it up for) and
 * keeping its repositories and their availability in step. Pull requests and pushes are elsewhere.
 */
import { Effect, Option, Schema } from "effect"
import type { GithubDelivery } from "./GithubDeliveriesRepo.ts"
import {
  InstallationEvent,
  InstallationRepositoriesEvent,
  type InstallationRepository,
  splitFullName
} from "./GithubEvents.ts"
import { applied, decodeFailure, type Handled, type InboxContext, ignored } from "./GithubInboxContext.ts"

const addRepositories = (ctx: InboxContext, organizationId: string, listed: ReadonlyArray<InstallationRepository>) =>
  Effect.forEach(
    listed,
    (repository) =>
      Effect.gen(function* () {
        const existing = yield* ctx.repositories.findByGithubId(organizationId, repository.id)
        const { owner, name } = splitFullName(repository.full_name)
        yield* ctx.repositories.upsert(organizationId, {
          githubRepositoryId: repository.id,
          owner,
          name,
          // Installation events do not say; the pull request and push events that follow do.
          defaultBranch: Option.match(existing, { onNone: () => "main", onSome: (found) => found.default_branch })
        })
      }),
    { discard: true }
  )

/**
 * Links the organization to the installation's account when it is the one the operator set the
 * organization up for; otherwise changes nothing, says why in one warn line with both logins,
 * and answers the reason the delivery is ignored (null when linked).
 */
const linkInstallation = (ctx: InboxContext, org: string, account: { readonly id: number; readonly login: string }) =>
  Effect.gen(function* () {
    const link = yield* ctx.organizations.linkGithubAccount(org, account)
    if (link.linked) return null
    yield* Effect.logWarning("github_installation_link_refused").pipe(
      Effect.annotateLogs({
        org_id: org,
        expected_login: link.expectedLogin,
        installation_login: account.login,
        installation_account_id: account.id
      })
    )
    return link.expectedLogin === null
      ? `the organization is not set up for a GitHub account (bosun organizations link), so ${account.login} cannot link it`
      : `the organization is set up for the GitHub account ${link.expectedLogin}, not ${account.login}`
  })

const applyInstallation = Effect.fnUntraced(function* (
  ctx: InboxContext,
  delivery: GithubDelivery,
  event: InstallationEvent
): Effect.fn.Return<Handled> {
  const org = delivery.organizationId
  switch (event.action) {
    case "created":
    case "new_permissions_accepted":
    case "unsuspend": {
      const refused = yield* linkInstallation(ctx, org, event.installation.account)
      if (refused !== null) return ignored(refused)
      yield* addRepositories(ctx, org, event.repositories ?? [])
      return applied(false)
    }
    case "deleted":
    case "suspend":
      yield* ctx.repositories.setAvailable(org, "ALL", false)
      return applied(false)
    default:
      return ignored(`installation action ${event.action} changes nothing here`)
  }
})

/** `installation`: created / new_permissions_accepted / unsuspend link and add; deleted / suspend make all unavailable. */
export const handleInstallation = (ctx: InboxContext, delivery: GithubDelivery) =>
  Schema.decodeUnknownEffect(InstallationEvent)(delivery.payload).pipe(
    Effect.flatMap((event) => applyInstallation(ctx, delivery, event)),
    Effect.catchTag("SchemaError", decodeFailure("installation"))
  )

const applyInstallationRepositories = Effect.fnUntraced(function* (
  ctx: InboxContext,
  delivery: GithubDelivery,
  event: InstallationRepositoriesEvent
): Effect.fn.Return<Handled> {
  const org = delivery.organizationId
  const refused = yield* linkInstallation(ctx, org, event.installation.account)
  if (refused !== null) return ignored(refused)
  yield* addRepositories(ctx, org, event.repositories_added)
  yield* ctx.repositories.setAvailable(
    org,
    event.repositories_removed.map((repository) => repository.id),
    false
  )
  return applied(false)
})

/** `installation_repositories`: added ones appear (available), removed ones become unavailable. */
export const handleInstallationRepositories = (ctx: InboxContext, delivery: GithubDelivery) =>
  Schema.decodeUnknownEffect(InstallationRepositoriesEvent)(delivery.payload).pipe(
    Effect.flatMap((event) => applyInstallationRepositories(ctx, delivery, event)),
    Effect.catchTag("SchemaError", decodeFailure("installation_repositories"))
  )
