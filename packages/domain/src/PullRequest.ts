/**
 * The pull-request list (docs/interface.md: Resources "Pull-request list item";
 * Organization endpoints `GET .../pull-requests`). Pages are newest-updated first; cursors are
 * opaque and point at a row's sort key, so rows inserted meanwhile never shift a page already
 * handed out. `page_size` is 1..100, default 25.
 */
import { Schema } from "effect"

export const PullRequestState = Schema.Literals(["OPEN", "CLOSED", "MERGED"])

/**
 * Where a pull request's review stands (docs/interface.md gives it only as a string): NOT_REVIEWED
 * until an event asks for one; QUEUED once a review run is queued; REVIEWED when one was posted;
 * FAILED when the last review run failed (its check run says why); SKIPPED when the policy decided
 * against reviewing (draft, excluded author, paused repository, too many changed files).
 */
export const ReviewStatus = Schema.Literals(["NOT_REVIEWED", "QUEUED", "REVIEWED", "FAILED", "SKIPPED"])
export type ReviewStatus = typeof ReviewStatus.Type

export const PullRequestListItem = Schema.Struct({
  author_login: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  id: Schema.String,
  number: Schema.Int,
  open_findings: Schema.Int,
  repository: Schema.String,
  repository_id: Schema.String,
  resolved_findings: Schema.Int,
  review_status: ReviewStatus,
  state: PullRequestState,
  title: Schema.String,
  updated_at: Schema.String
})
export type PullRequestListItem = typeof PullRequestListItem.Type

export const DEFAULT_PAGE_SIZE = 25
export const MAX_PAGE_SIZE = 100

/** A page size as the query string carries it: an integer 1..100. */
export const PageSize = Schema.NumberFromString.check(
  Schema.isInt(),
  Schema.isBetween({ minimum: 1, maximum: MAX_PAGE_SIZE })
)

export const PageMeta = Schema.Struct({
  next_cursor: Schema.NullOr(Schema.String),
  previous_cursor: Schema.NullOr(Schema.String)
})

/** A page of the pull-request list (`PullRequestsApi`), a Schema of its own so the dashboard's first screen can read it without the HTTP client. */
export const PullRequestPage = Schema.Struct({ data: Schema.Array(PullRequestListItem), meta: PageMeta })
