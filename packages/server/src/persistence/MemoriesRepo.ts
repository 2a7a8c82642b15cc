/**
 * Memories of an organization (spec: Resources "Memory"), read with their repository's owner and
 * name and the logins of the people named on them; every query filters by the organization.
 */
import type { Memory } from "@bosun/domain"
import { Context, Data, Effect, Layer, Option } from "effect"
import { SqlClient, type Statement } from "effect/sql"

/** Only an APPROVED memory can be enabled or disabled. */
export class MemoryNotApproved extends Data.TaggedError("MemoryNotApproved")<{ readonly lifecycle: string }> {}

type Row = Omit<Memory, "created_at" | "updated_at" | "approved_at" | "last_toggled_at" | "metadata"> & {
  readonly metadata: Partial<Memory["metadata"]>
  readonly created_at: Date
  readonly updated_at: Date
  readonly approved_at: Date | null
  readonly last_toggled_at: Date | null
}

const toMemory = (row: Row): Memory => ({
  ...row,
  // Every key of the spec's metadata, null when the source did not record it.
  metadata: {
    file_path: row.metadata.file_path ?? null,
    language: row.metadata.language ?? null,
    pull_request_number: row.metadata.pull_request_number ?? null,
    source_comment_id: row.metadata.source_comment_id ?? null
  },
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
  approved_at: row.approved_at?.toISOString() ?? null,
  last_toggled_at: row.last_toggled_at?.toISOString() ?? null
})

export interface NewMemory {
  readonly repositoryId: string | null
  readonly convention: string
  readonly purpose?: string
  readonly rationale?: string
  readonly proposedBy?: string
  readonly sourceType?: string
  readonly sourceUrl?: string
  readonly metadata?: Partial<Memory["metadata"]>
}

export class MemoriesRepo extends Context.Service<
  MemoriesRepo,
  {
    readonly list: (organizationId: string) => Effect.Effect<ReadonlyArray<Memory>>
    readonly find: (organizationId: string, memoryId: string) => Effect.Effect<Option.Option<Memory>>
    /** Enables or disables an approved memory, recording who did it and when. */
    readonly toggle: (
      organizationId: string,
      memoryId: string,
      enabled: boolean,
      userId: string
    ) => Effect.Effect<Option.Option<Memory>, MemoryNotApproved>
    /** A proposed memory (what review feedback or a person suggests; tests use it too). */
    readonly propose: (organizationId: string, memory: NewMemory) => Effect.Effect<Memory>
    /** An ADMIN's decision on a proposed memory. */
    readonly decide: (
      organizationId: string,
      memoryId: string,
      approve: boolean,
      userId: string
    ) => Effect.Effect<Option.Option<Memory>>
  }
>()("bosun/server/persistence/MemoriesRepo") {
  static readonly layer = Layer.effect(
    MemoriesRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const select = (where: Statement.Fragment) => sql<Row>`
        SELECT m.id, m.organization_id, m.repository_id, m.scope, m.lifecycle, m.enabled, m.convention, m.purpose,
               m.rationale, m.metadata, m.proposed_by, proposer.login AS proposed_by_login, m.approved_at,
               m.approved_by, approver.login AS approved_by_login, m.last_toggled_at, m.last_toggled_by,
               toggler.login AS last_toggled_by_login, m.source_actor, m.source_finding_id, m.source_run_id,
               m.source_type, m.source_url, m.created_at, m.updated_at,
               r.name AS repository_name, r.owner AS repository_owner
        FROM memories m
        LEFT JOIN repositories r ON r.id = m.repository_id AND r.organization_id = m.organization_id
        LEFT JOIN users proposer ON proposer.id = m.proposed_by
        LEFT JOIN users approver ON approver.id = m.approved_by
        LEFT JOIN users toggler ON toggler.id = m.last_toggled_by
        WHERE ${where}
        ORDER BY m.created_at DESC, m.id`

      const find = Effect.fn("MemoriesRepo.find")(function* (organizationId: string, memoryId: string) {
        const [row] = yield* select(sql`m.organization_id = ${organizationId} AND m.id = ${memoryId}`).pipe(
          Effect.orDie
        )
        return Option.map(Option.fromUndefinedOr(row), toMemory)
      })

      return MemoriesRepo.of({
        list: Effect.fn("MemoriesRepo.list")(function* (organizationId: string) {
          const rows = yield* select(sql`m.organization_id = ${organizationId}`).pipe(Effect.orDie)
          return rows.map(toMemory)
        }),
        find,
        toggle: Effect.fn("MemoriesRepo.toggle")(function* (
          organizationId: string,
          memoryId: string,
          enabled: boolean,
          userId: string
        ) {
          const [row] = yield* sql<{ lifecycle: string; updated: boolean }>`
            WITH target AS (
              SELECT id, lifecycle FROM memories WHERE organization_id = ${organizationId} AND id = ${memoryId}
              FOR UPDATE
            ), updated AS (
              UPDATE memories m SET enabled = ${enabled}, last_toggled_at = now(), last_toggled_by = ${userId},
                     updated_at = now()
              FROM target WHERE m.id = target.id AND target.lifecycle = 'APPROVED'
              RETURNING m.id
            )
            SELECT target.lifecycle, EXISTS (SELECT 1 FROM updated) AS updated FROM target`.pipe(Effect.orDie)
          if (row === undefined) return Option.none()
          if (!row.updated) return yield* new MemoryNotApproved({ lifecycle: row.lifecycle })
          return yield* find(organizationId, memoryId)
        }),
        propose: Effect.fn("MemoriesRepo.propose")(function* (organizationId: string, memory: NewMemory) {
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO memories (organization_id, repository_id, scope, convention, purpose, rationale, proposed_by,
                                  source_type, source_url, metadata)
            VALUES (${organizationId}, ${memory.repositoryId}, ${memory.repositoryId === null ? "ORGANIZATION" : "REPOSITORY"},
                    ${memory.convention}, ${memory.purpose ?? null}, ${memory.rationale ?? null},
                    ${memory.proposedBy ?? null}, ${memory.sourceType ?? null}, ${memory.sourceUrl ?? null},
                    ${JSON.stringify(memory.metadata ?? {})}::jsonb)
            RETURNING id`.pipe(Effect.orDie)
          return yield* Effect.map(find(organizationId, row?.id ?? ""), Option.getOrThrow)
        }),
        decide: Effect.fn("MemoriesRepo.decide")(function* (
          organizationId: string,
          memoryId: string,
          approve: boolean,
          userId: string
        ) {
          const rows = yield* sql`
            UPDATE memories SET lifecycle = ${approve ? "APPROVED" : "REJECTED"},
                   approved_at = CASE WHEN ${approve} THEN now() ELSE NULL END,
                   approved_by = CASE WHEN ${approve} THEN ${userId} ELSE NULL END, updated_at = now()
            WHERE organization_id = ${organizationId} AND id = ${memoryId} AND lifecycle = 'PROPOSED'
            RETURNING id`.pipe(Effect.orDie)
          if (rows.length === 0) return Option.none()
          return yield* find(organizationId, memoryId)
        })
      })
    })
  )
}
