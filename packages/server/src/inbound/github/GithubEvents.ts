/**
 * The parts of GitHub's webhook payloads the inbox consumer reads (GitHub's documented
 * `installation`, `installation_repositories`, `pull_request`, `pull_request_review_comment`,
 * `issue_comment` and `push` events), as Schemas: a payload
 * that lacks them fails its decoding and the delivery is recorded as ignored with the reason,
 * instead of being half-applied. Unknown fields are kept out of the decoded value.
 */
import { Schema } from "effect"

const Account = Schema.Struct({ id: Schema.Int, login: Schema.String })

/** A repository as installation events list it: no owner object, `full_name` is `owner/name`. */
export const InstallationRepository = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  full_name: Schema.String
})
export type InstallationRepository = typeof InstallationRepository.Type

export const InstallationEvent = Schema.Struct({
  action: Schema.String,
  installation: Schema.Struct({ id: Schema.Int, account: Account }),
  repositories: Schema.optional(Schema.Array(InstallationRepository))
})
export type InstallationEvent = typeof InstallationEvent.Type

export const InstallationRepositoriesEvent = Schema.Struct({
  action: Schema.String,
  installation: Schema.Struct({ id: Schema.Int, account: Account }),
  repository_selection: Schema.optional(Schema.String),
  repositories_added: Schema.Array(InstallationRepository),
  repositories_removed: Schema.Array(InstallationRepository)
})
export type InstallationRepositoriesEvent = typeof InstallationRepositoriesEvent.Type

/** A repository as most events carry it. */
export const EventRepository = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  owner: Account,
  default_branch: Schema.optional(Schema.String)
})

export const PullRequestEvent = Schema.Struct({
  action: Schema.String,
  number: Schema.Int,
  pull_request: Schema.Struct({
    number: Schema.Int,
    title: Schema.String,
    state: Schema.Literals(["open", "closed"]),
    draft: Schema.optional(Schema.Boolean),
    changed_files: Schema.optional(Schema.Int),
    merged: Schema.optional(Schema.NullOr(Schema.Boolean)),
    user: Schema.NullOr(Schema.Struct({ login: Schema.String })),
    head: Schema.Struct({ sha: Schema.String }),
    base: Schema.Struct({ sha: Schema.String })
  }),
  repository: EventRepository
})
export type PullRequestEvent = typeof PullRequestEvent.Type

/** `owner/name` split at its one slash. */
export const splitFullName = (fullName: string) => {
  const slash = fullName.indexOf("/")
  return { owner: fullName.slice(0, slash), name: fullName.slice(slash + 1) }
}

/** A review comment: `in_reply_to_id` names the thread's first comment when it is a reply. */
export const PullRequestReviewCommentEvent = Schema.Struct({
  action: Schema.String,
  comment: Schema.Struct({
    id: Schema.Int,
    in_reply_to_id: Schema.optional(Schema.Int),
    body: Schema.String,
    path: Schema.optional(Schema.String),
    html_url: Schema.optional(Schema.String),
    author_association: Schema.optional(Schema.String),
    user: Schema.NullOr(Schema.Struct({ login: Schema.String, type: Schema.optional(Schema.String) }))
  }),
  pull_request: Schema.Struct({ number: Schema.Int }),
  repository: EventRepository
})
export type PullRequestReviewCommentEvent = typeof PullRequestReviewCommentEvent.Type

/**
 * A conversation comment on an issue or a pull request (GitHub sends pull requests' as issue
 * comments): `issue.pull_request` is present only on a pull request's. `author_association` is
 * kept as a string so that a value GitHub adds later is refused by the caller, not undecodable.
 */
export const IssueCommentEvent = Schema.Struct({
  action: Schema.String,
  issue: Schema.Struct({
    number: Schema.Int,
    title: Schema.String,
    state: Schema.optional(Schema.Literals(["open", "closed"])),
    user: Schema.NullOr(Schema.Struct({ login: Schema.String })),
    body: Schema.optional(Schema.NullOr(Schema.String)),
    html_url: Schema.optional(Schema.String),
    pull_request: Schema.optional(Schema.Struct({ merged_at: Schema.optional(Schema.NullOr(Schema.String)) }))
  }),
  comment: Schema.Struct({
    id: Schema.Int,
    body: Schema.String,
    html_url: Schema.optional(Schema.String),
    author_association: Schema.String,
    user: Schema.NullOr(Schema.Struct({ login: Schema.String, type: Schema.optional(Schema.String) }))
  }),
  repository: EventRepository
})
export type IssueCommentEvent = typeof IssueCommentEvent.Type

const CommitSha = Schema.String.pipe(Schema.check(Schema.isPattern(/^[0-9a-f]{40}([0-9a-f]{24})?$/)))

/**
 * A push: `ref` is `refs/heads/<branch>` or `refs/tags/<tag>`, `after` the ref's new head (zeros
 * when `deleted`). The repository's `pushed_at` is epoch seconds in push events (a date-time string
 * elsewhere); GitHub documents both.
 */
export const PushEvent = Schema.Struct({
  ref: Schema.String,
  before: Schema.String,
  after: CommitSha,
  deleted: Schema.Boolean,
  repository: Schema.Struct({
    ...EventRepository.fields,
    default_branch: Schema.String,
    pushed_at: Schema.optional(Schema.NullOr(Schema.Union([Schema.Number, Schema.String])))
  })
})
export type PushEvent = typeof PushEvent.Type
