/**
 * Work items of an organization (spec: Resources "Work item"). `act` applies an action under a
 * row lock with the domain's state machine (`applyAction`), so two concurrent actions cannot both
 * pass the same check. Every query filters by the organization.
 */
import {
  applyAction,
  availableActions,
  type WaitingReason,
  type WorkItem,
  type WorkItemAction,
  type WorkItemPhase,
  type WorkItemState
} from "@bosun/domain"
import { Context, Data, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"

/** The item's current status does not offer the action. */
export class ActionNotAvailable extends Data.TaggedError("ActionNotAvailable")<{
  readonly state: WorkItemState
  readonly available: ReadonlyArray<WorkItemAction>
}> {}

type Row = Omit<WorkItem, "available_actions" | "created_at" | "updated_at" | "completed_at"> & {
  readonly created_at: Date
  readonly updated_at: Date
  readonly completed_at: Date | null
}

const toWorkItem = (row: Row): WorkItem => ({
  ...row,
  available_actions: availableActions(row),
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
  completed_at: row.completed_at?.toISOString() ?? null
})

export interface NewWorkItem {
  readonly kind: WorkItem["kind"]
  readonly source: WorkItem["source"]
  readonly title: string
  readonly summary?: string
  readonly sourceUrl?: string
  readonly requestedByLogin?: string
  readonly primaryRepositoryId?: string
  readonly state?: WorkItemState
  readonly phase?: WorkItemPhase
  readonly waitingReason?: WaitingReason
  /** The thread or ticket it belongs to (`linear:{issue}`...): one work item per session. */
  readonly sessionKey?: string
}

export class WorkItemsRepo extends Context.Service<
  WorkItemsRepo,
  {
    readonly list: (organizationId: string) => Effect.Effect<ReadonlyArray<WorkItem>>
    readonly find: (organizationId: string, id: string) => Effect.Effect<Option.Option<WorkItem>>
    /** Applies the action in the caller's transaction; none when there is no such item. */
    readonly act: (
      organizationId: string,
      id: string,
      action: WorkItemAction
    ) => Effect.Effect<Option.Option<WorkItem>, ActionNotAvailable>
    /** Records a work item (the chat, tracker and GitHub intake's write; tests use it too). */
    readonly create: (organizationId: string, item: NewWorkItem) => Effect.Effect<WorkItem>
    /**
     * The work item of the item's session, created when there is none; `created` says which. Two
     * deliveries of one thread racing get the same item (the session key is unique).
     */
    readonly forSession: (
      organizationId: string,
      item: NewWorkItem & { readonly sessionKey: string }
    ) => Effect.Effect<{ readonly item: WorkItem; readonly created: boolean }>
  }
>()("bosun/server/persistence/WorkItemsRepo") {
  static readonly layer = Layer.effect(
    WorkItemsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const columns = sql.literal(
        `id, organization_id, kind, source, source_url, title, summary, state, phase, waiting_reason,
         primary_repository_id, parent_work_item_id, parent_artifact_id, active_run_id, requested_by_login,
         completed_at, created_at, updated_at`
      )
      const insert = (organizationId: string, item: NewWorkItem, keepExisting: boolean) =>
        sql<Row>`
          INSERT INTO work_items (organization_id, kind, source, source_url, title, summary, requested_by_login,
                                  primary_repository_id, state, phase, waiting_reason, session_key)
          VALUES (${organizationId}, ${item.kind}, ${item.source}, ${item.sourceUrl ?? null}, ${item.title},
                  ${item.summary ?? null}, ${item.requestedByLogin ?? null}, ${item.primaryRepositoryId ?? null},
                  ${item.state ?? "OPEN"}, ${item.phase ?? "INTAKE"}, ${item.waitingReason ?? null},
                  ${item.sessionKey ?? null})
          ${keepExisting ? sql`ON CONFLICT (organization_id, session_key) WHERE session_key IS NOT NULL DO NOTHING` : sql``}
          RETURNING ${columns}`.pipe(Effect.orDie)
      const find = Effect.fn("WorkItemsRepo.find")(function* (organizationId: string, id: string) {
        const [row] = yield* sql<Row>`
          SELECT ${columns} FROM work_items WHERE organization_id = ${organizationId} AND id = ${id}`.pipe(Effect.orDie)
        return Option.map(Option.fromUndefinedOr(row), toWorkItem)
      })
      return WorkItemsRepo.of({
        list: Effect.fn("WorkItemsRepo.list")(function* (organizationId: string) {
          const rows = yield* sql<Row>`
            SELECT ${columns} FROM work_items WHERE organization_id = ${organizationId}
            ORDER BY updated_at DESC, id`.pipe(Effect.orDie)
          return rows.map(toWorkItem)
        }),
        find,
        act: Effect.fn("WorkItemsRepo.act")(function* (organizationId: string, id: string, action: WorkItemAction) {
          const [row] = yield* sql<Row>`
            SELECT ${columns} FROM work_items WHERE organization_id = ${organizationId} AND id = ${id}
            FOR UPDATE`.pipe(Effect.orDie)
          if (row === undefined) return Option.none()
          const next = applyAction(row, action)
          if (next === undefined) {
            return yield* new ActionNotAvailable({ state: row.state, available: availableActions(row) })
          }
          const completed =
            next.completed === "now" ? sql`now()` : next.completed === "cleared" ? sql`NULL` : sql`completed_at`
          const [updated] = yield* sql<Row>`
            UPDATE work_items SET state = ${next.state}, phase = ${next.phase}, waiting_reason = ${next.waiting_reason},
                   completed_at = ${completed}, updated_at = now()
            WHERE organization_id = ${organizationId} AND id = ${id}
            RETURNING ${columns}`.pipe(Effect.orDie)
          return Option.map(Option.fromUndefinedOr(updated), toWorkItem)
        }),
        create: Effect.fn("WorkItemsRepo.create")(function* (organizationId: string, item: NewWorkItem) {
          const [row] = yield* insert(organizationId, item, false)
          if (row === undefined) return yield* Effect.die(new Error("work item insert returned no row"))
          return toWorkItem(row)
        }),
        forSession: Effect.fn("WorkItemsRepo.forSession")(function* (
          organizationId: string,
          item: NewWorkItem & { readonly sessionKey: string }
        ) {
          const [inserted] = yield* insert(organizationId, item, true)
          if (inserted !== undefined) return { item: toWorkItem(inserted), created: true }
          const [existing] = yield* sql<Row>`
            SELECT ${columns} FROM work_items
            WHERE organization_id = ${organizationId} AND session_key = ${item.sessionKey}`.pipe(Effect.orDie)
          if (existing === undefined) return yield* Effect.die(new Error("the session's work item vanished"))
          return { item: toWorkItem(existing), created: false }
        })
      })
    })
  )
}
