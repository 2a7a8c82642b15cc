/**
 * Pull requests of an organization, listed newest-updated first in keyset pages
 * (docs/interface.md: Organization endpoints `GET .../pull-requests`). Every query filters by the
 * organization.
 */
import type { PullRequestListItem, ReviewStatus } from "@bosun/domain"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { encodeCursor, type PageCursor, type SortKey } from "../../platform/db/PageCursor.ts"

type Row = Omit<PullRequestListItem, "created_at" | "updated_at"> & {
  readonly created_at: Date
  readonly updated_at: Date
  readonly sort_micros: string
}

export interface PullRequestPage {
  readonly data: ReadonlyArray<PullRequestListItem>
  readonly meta: { readonly next_cursor: string | null; readonly previous_cursor: string | null }
}

export class PullRequestsRepo extends Context.Service<
  PullRequestsRepo,
  {
    readonly list: (
      organizationId: string,
      options: {
        readonly state: "OPEN" | "CLOSED" | "MERGED" | undefined
        readonly search: string | undefined
        readonly cursor: PageCursor | undefined
        readonly pageSize: number
      }
    ) => Effect.Effect<PullRequestPage>
    /** Records a pull request (the GitHub integration's write; tests use it too). */
    readonly upsert: (
      organizationId: string,
      pullRequest: {
        readonly repositoryId: string
        readonly number: number
        readonly title: string
        readonly authorLogin: string | null
        readonly state?: "OPEN" | "CLOSED" | "MERGED"
      }
    ) => Effect.Effect<PullRequestListItem>
    /** Records where the pull request's review stands; false when Bosun does not know the pull request. */
    readonly setReviewStatus: (
      organizationId: string,
      pullRequest: { readonly repositoryId: string; readonly number: number },
      status: ReviewStatus
    ) => Effect.Effect<boolean>
  }
>()("bosun/server/persistence/PullRequestsRepo") {
  static readonly layer = Layer.effect(
    PullRequestsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const micros = sql.literal("(extract(epoch from p.updated_at) * 1000000)::bigint")
      const columns = sql.literal(
        `p.author_login, p.created_at, p.id, p.number, p.open_findings, r.owner || '/' || r.name AS repository,
         p.repository_id, p.resolved_findings, p.review_status, p.state, p.title, p.updated_at,
         ((extract(epoch from p.updated_at) * 1000000)::bigint)::text AS sort_micros`
      )
      const toItem = ({ sort_micros: _, ...row }: Row): PullRequestListItem => ({
        ...row,
        created_at: row.created_at.toISOString(),
        updated_at: row.updated_at.toISOString()
      })
      const keyOf = (row: Row): SortKey => ({ micros: row.sort_micros, id: row.id })

      return PullRequestsRepo.of({
        list: Effect.fn("PullRequestsRepo.list")(function* (organizationId, options) {
          const backwards = options.cursor?.direction === "prev"
          const state = options.state === undefined ? sql`TRUE` : sql`p.state = ${options.state}`
          const pattern = options.search === undefined ? undefined : `%${options.search.replace(/[\\%_]/g, "\\$&")}%`
          const search =
            pattern === undefined
              ? sql`TRUE`
              : sql`(p.title ILIKE ${pattern} OR r.owner || '/' || r.name ILIKE ${pattern}
                     OR p.number::text = ${options.search ?? ""})`
          const after =
            options.cursor === undefined
              ? sql`TRUE`
              : backwards
                ? sql`(${micros}, p.id) > (${options.cursor.key.micros}::bigint, ${options.cursor.key.id})`
                : sql`(${micros}, p.id) < (${options.cursor.key.micros}::bigint, ${options.cursor.key.id})`
          const order = backwards ? sql.literal("ASC") : sql.literal("DESC")
          const rows = yield* sql<Row>`
            SELECT ${columns} FROM pull_requests p JOIN repositories r ON r.id = p.repository_id AND r.organization_id = p.organization_id
            WHERE p.organization_id = ${organizationId} AND ${state} AND ${search} AND ${after}
            ORDER BY ${micros} ${order}, p.id ${order}
            LIMIT ${options.pageSize + 1}`.pipe(Effect.orDie)
          const more = rows.length > options.pageSize
          const page = rows.slice(0, options.pageSize)
          if (backwards) page.reverse()
          const first = page[0]
          const last = page[page.length - 1]
          // Going forward there is a previous page whenever we came from a cursor; going back,
          // a next page always (the one we came from).
          const hasNext = backwards ? true : more
          const hasPrevious = backwards ? more : options.cursor !== undefined
          return {
            data: page.map(toItem),
            meta: {
              next_cursor: hasNext && last !== undefined ? encodeCursor({ direction: "next", key: keyOf(last) }) : null,
              previous_cursor:
                hasPrevious && first !== undefined ? encodeCursor({ direction: "prev", key: keyOf(first) }) : null
            }
          }
        }),
        upsert: Effect.fn("PullRequestsRepo.upsert")(function* (organizationId, pullRequest) {
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO pull_requests (organization_id, repository_id, number, title, author_login, state)
            VALUES (${organizationId}, ${pullRequest.repositoryId}, ${pullRequest.number}, ${pullRequest.title},
                    ${pullRequest.authorLogin}, ${pullRequest.state ?? "OPEN"})
            ON CONFLICT (repository_id, number) DO UPDATE SET
              title = excluded.title, state = excluded.state, updated_at = now()
            RETURNING id`.pipe(Effect.orDie)
          const [item] = yield* sql<Row>`
            SELECT ${columns} FROM pull_requests p JOIN repositories r ON r.id = p.repository_id AND r.organization_id = p.organization_id
            WHERE p.organization_id = ${organizationId} AND p.id = ${row?.id ?? ""}`.pipe(Effect.orDie)
          if (item === undefined) return yield* Effect.die(new Error("pull request upsert returned no row"))
          return toItem(item)
        }),
        setReviewStatus: Effect.fn("PullRequestsRepo.setReviewStatus")(function* (organizationId, pullRequest, status) {
          const rows = yield* sql<{ id: string }>`
            UPDATE pull_requests SET review_status = ${status}, updated_at = now()
            WHERE organization_id = ${organizationId} AND repository_id = ${pullRequest.repositoryId}
              AND number = ${pullRequest.number}
            RETURNING id`.pipe(Effect.orDie)
          return rows.length > 0
        })
      })
    })
  )
}
