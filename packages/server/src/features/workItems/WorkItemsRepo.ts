/**
 * Work items of an organization (docs/interface.md: Resources "Work item"). `act` applies an action
 * under a row lock with the domain's state machine (`applyAction`), so two concurrent actions
 * cannot both pass the same check. Every query filters by the organization.
 */
import {
  afterFollowUp,
  afterIntake,
  applyAction,
  availableActions,
  type IntakeDecision,
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
  /** A plan decided elsewhere (a deep scan's accepted findings), for an item created ready to implement. */
  readonly plan?: { readonly repository: string; readonly title: string; readonly plan: string }
}

/** A work item as its runs see it: with the session it belongs to and its plan, if any. */
export interface WorkItemForRun {
  readonly item: WorkItem
  readonly sessionKey: string | null
  readonly plan: { readonly repository: string; readonly title: string; readonly plan: string } | null
}

type Sql = SqlClient.SqlClient
type Columns = ReturnType<Sql["literal"]>

/** The columns of a work item as `Row` reads them. */
const workItemColumns = (sql: Sql) =>
  sql.literal(
    `id, organization_id, kind, source, source_url, title, summary, state, phase, waiting_reason,
     primary_repository_id, parent_work_item_id, parent_artifact_id, active_run_id, requested_by_login,
     completed_at, created_at, updated_at`
  )

/** Reads of work items and their conversations. */
const readers = (sql: Sql, columns: Columns) => ({
  list: Effect.fn("WorkItemsRepo.list")(function* (organizationId: string) {
    const rows = yield* sql<Row>`
      SELECT ${columns} FROM work_items WHERE organization_id = ${organizationId}
      ORDER BY updated_at DESC, id`.pipe(Effect.orDie)
    return rows.map(toWorkItem)
  }),
  find: Effect.fn("WorkItemsRepo.find")(function* (organizationId: string, id: string) {
    const [row] = yield* sql<Row>`
      SELECT ${columns} FROM work_items WHERE organization_id = ${organizationId} AND id = ${id}`.pipe(Effect.orDie)
    return Option.map(Option.fromUndefinedOr(row), toWorkItem)
  }),
  forRun: Effect.fn("WorkItemsRepo.forRun")(function* (organizationId: string, id: string) {
    const [row] = yield* sql<Row & { session_key: string | null; plan: WorkItemForRun["plan"] }>`
      SELECT ${columns}, session_key, plan FROM work_items
      WHERE organization_id = ${organizationId} AND id = ${id}`.pipe(Effect.orDie)
    if (row === undefined) return Option.none()
    const { session_key, plan, ...item } = row
    return Option.some({ item: toWorkItem(item), sessionKey: session_key, plan })
  }),
  messages: Effect.fn("WorkItemsRepo.messages")(function* (organizationId: string, id: string) {
    return yield* sql<{ author: string | null; body: string }>`
      SELECT author, body FROM work_item_messages
      WHERE organization_id = ${organizationId} AND work_item_id = ${id} ORDER BY id`.pipe(Effect.orDie)
  })
})

/** Recording new work items, one per session where they have one. */
const creators = (sql: Sql, columns: Columns) => {
  const insert = (organizationId: string, item: NewWorkItem, keepExisting: boolean) =>
    sql<Row>`
      INSERT INTO work_items (organization_id, kind, source, source_url, title, summary, requested_by_login,
                              primary_repository_id, state, phase, waiting_reason, session_key, plan)
      VALUES (${organizationId}, ${item.kind}, ${item.source}, ${item.sourceUrl ?? null}, ${item.title},
              ${item.summary ?? null}, ${item.requestedByLogin ?? null}, ${item.primaryRepositoryId ?? null},
              ${item.state ?? "OPEN"}, ${item.phase ?? "INTAKE"}, ${item.waitingReason ?? null},
              ${item.sessionKey ?? null},
              ${item.plan === undefined ? null : JSON.stringify(item.plan)}::jsonb)
      ${keepExisting ? sql`ON CONFLICT (organization_id, session_key) WHERE session_key IS NOT NULL DO NOTHING` : sql``}
      RETURNING ${columns}`.pipe(Effect.orDie)
  return {
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
  }
}

/** Moves of an item's state: an action, the intake's decision, a follow-up back to intake. */
const transitions = (sql: Sql, columns: Columns) => ({
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
  recordIntake: Effect.fn("WorkItemsRepo.recordIntake")(function* (
    organizationId: string,
    id: string,
    runId: string,
    decision: IntakeDecision,
    details: {
      readonly primaryRepositoryId?: string | undefined
      readonly plan?: WorkItemForRun["plan"] | undefined
    }
  ) {
    const next = afterIntake(decision)
    const [row] = yield* sql<Row>`
      UPDATE work_items SET state = ${next.state}, phase = ${next.phase}, waiting_reason = ${next.waiting_reason},
             kind = coalesce(${next.kind ?? null}, kind),
             primary_repository_id = coalesce(${details.primaryRepositoryId ?? null}, primary_repository_id),
             plan = coalesce(${details.plan === undefined ? null : JSON.stringify(details.plan)}::jsonb, plan),
             completed_at = ${next.completed === "now" ? sql`now()` : sql`completed_at`},
             active_run_id = NULL, updated_at = now()
      WHERE organization_id = ${organizationId} AND id = ${id} AND active_run_id = ${runId}
        AND state IN ('OPEN', 'IN_PROGRESS') AND phase = 'INTAKE'
      RETURNING ${columns}`.pipe(Effect.orDie)
    return Option.map(Option.fromUndefinedOr(row), toWorkItem)
  }),
  followUp: Effect.fn("WorkItemsRepo.followUp")(function* (
    organizationId: string,
    id: string,
    message: { readonly author: string | null; readonly body: string; readonly deliveryId: string }
  ) {
    const [row] = yield* sql<Row>`
      SELECT ${columns} FROM work_items WHERE organization_id = ${organizationId} AND id = ${id}
      FOR UPDATE`.pipe(Effect.orDie)
    if (row === undefined) return Option.none()
    const next = afterFollowUp(row)
    if (next === undefined) return Option.none()
    const recorded = yield* sql<{ id: string }>`
      INSERT INTO work_item_messages (organization_id, work_item_id, author, body, source_delivery_id)
      VALUES (${organizationId}, ${id}, ${message.author}, ${message.body.slice(0, 40_000)}, ${message.deliveryId})
      ON CONFLICT (organization_id, source_delivery_id) DO NOTHING
      RETURNING id::text AS id`.pipe(Effect.orDie)
    if (recorded.length === 0) return Option.none()
    const [updated] = yield* sql<Row>`
      UPDATE work_items SET state = ${next.state}, phase = ${next.phase}, waiting_reason = ${next.waiting_reason},
             completed_at = NULL, updated_at = now()
      WHERE organization_id = ${organizationId} AND id = ${id}
      RETURNING ${columns}`.pipe(Effect.orDie)
    return Option.map(Option.fromUndefinedOr(updated), toWorkItem)
  })
})

/** What the item's runs and its pull request record on it. */
const runOutcomes = (sql: Sql, columns: Columns) => ({
  startRun: Effect.fn("WorkItemsRepo.startRun")(function* (organizationId: string, id: string, runId: string) {
    yield* sql`UPDATE work_items SET active_run_id = ${runId}, updated_at = now()
               WHERE organization_id = ${organizationId} AND id = ${id}`.pipe(Effect.orDie)
  }),
  recordPullRequest: Effect.fn("WorkItemsRepo.recordPullRequest")(function* (
    organizationId: string,
    id: string,
    runId: string,
    pull: { readonly number: number; readonly url: string }
  ) {
    const [row] = yield* sql<Row>`
      UPDATE work_items SET state = 'IN_PROGRESS', phase = 'REVIEWING', waiting_reason = NULL,
             pull_request_number = ${pull.number}, pull_request_url = ${pull.url},
             active_run_id = NULL, updated_at = now()
      WHERE organization_id = ${organizationId} AND id = ${id} AND active_run_id = ${runId}
        AND phase = 'IMPLEMENTING' AND state = 'IN_PROGRESS'
      RETURNING ${columns}`.pipe(Effect.orDie)
    return Option.map(Option.fromUndefinedOr(row), toWorkItem)
  }),
  pullRequestClosed: Effect.fn("WorkItemsRepo.pullRequestClosed")(function* (
    organizationId: string,
    repositoryId: string,
    number: number,
    merged: boolean
  ) {
    const rows = yield* sql<Row>`
      UPDATE work_items SET state = ${merged ? "COMPLETED" : "CANCELLED"}, phase = 'DONE', waiting_reason = NULL,
             completed_at = now(), updated_at = now()
      WHERE organization_id = ${organizationId} AND primary_repository_id = ${repositoryId}
        AND pull_request_number = ${number} AND phase = 'REVIEWING' AND state = 'IN_PROGRESS'
      RETURNING ${columns}`.pipe(Effect.orDie)
    return rows.map(toWorkItem)
  }),
  recordRunFailed: Effect.fn("WorkItemsRepo.recordRunFailed")(function* (
    organizationId: string,
    id: string,
    runId: string
  ) {
    const [row] = yield* sql<Row>`
      UPDATE work_items SET state = 'FAILED', waiting_reason = NULL, active_run_id = NULL, updated_at = now()
      WHERE organization_id = ${organizationId} AND id = ${id} AND active_run_id = ${runId}
        AND state IN ('OPEN', 'IN_PROGRESS')
      RETURNING ${columns}`.pipe(Effect.orDie)
    return Option.map(Option.fromUndefinedOr(row), toWorkItem)
  })
})

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
    readonly forRun: (organizationId: string, id: string) => Effect.Effect<Option.Option<WorkItemForRun>>
    /** Records `runId` as the item's active run (in the transaction that queued it). */
    readonly startRun: (organizationId: string, id: string, runId: string) => Effect.Effect<void>
    /**
     * Applies the intake run's decision, once: only while `runId` is the item's active run and the
     * item is still in intake (a cancelled item, or a decision already recorded, changes nothing:
     * none). Clears the active run.
     */
    readonly recordIntake: (
      organizationId: string,
      id: string,
      runId: string,
      decision: IntakeDecision,
      details: {
        readonly primaryRepositoryId?: string | undefined
        readonly plan?: WorkItemForRun["plan"] | undefined
      }
    ) => Effect.Effect<Option.Option<WorkItem>>
    /**
     * Records a follow-up message of the item's conversation, once per delivery, and moves the
     * item back to intake (domain `afterFollowUp`); none when the item takes no follow-up
     * (CANCELLED) or the delivery was recorded already.
     */
    readonly followUp: (
      organizationId: string,
      id: string,
      message: { readonly author: string | null; readonly body: string; readonly deliveryId: string }
    ) => Effect.Effect<Option.Option<WorkItem>>
    /** The follow-ups of the item's conversation, oldest first. */
    readonly messages: (
      organizationId: string,
      id: string
    ) => Effect.Effect<ReadonlyArray<{ readonly author: string | null; readonly body: string }>>
    /**
     * The implement run `runId` opened the item's pull request: IN_PROGRESS / REVIEWING, following
     * it; none when the run is no longer the item's active run or the item left IMPLEMENTING.
     */
    readonly recordPullRequest: (
      organizationId: string,
      id: string,
      runId: string,
      pull: { readonly number: number; readonly url: string }
    ) => Effect.Effect<Option.Option<WorkItem>>
    /**
     * GitHub closed the pull request an item follows: merged, COMPLETED; else CANCELLED. Answers
     * the items it ended (none when no item follows it).
     */
    readonly pullRequestClosed: (
      organizationId: string,
      repositoryId: string,
      number: number,
      merged: boolean
    ) => Effect.Effect<ReadonlyArray<WorkItem>>
    /** The active run `runId` failed for good: the item is FAILED in its phase; none when it moved on. */
    readonly recordRunFailed: (
      organizationId: string,
      id: string,
      runId: string
    ) => Effect.Effect<Option.Option<WorkItem>>
  }
>()("bosun/server/persistence/WorkItemsRepo") {
  static readonly layer = Layer.effect(
    WorkItemsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const columns = workItemColumns(sql)
      return WorkItemsRepo.of({
        ...readers(sql, columns),
        ...creators(sql, columns),
        ...transitions(sql, columns),
        ...runOutcomes(sql, columns)
      })
    })
  )
}
