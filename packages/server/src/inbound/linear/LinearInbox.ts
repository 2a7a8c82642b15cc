/**
 * The `bosun-inbox` handler of Linear deliveries (docs/interface.md: What the service does 1;
 * Resources "Work item"; Events 3): one ticket is one work item (session `linear:{issue id}`).
 *
 * - `Issue` created assigned to Bosun's Linear user, or updated so that it becomes assigned to it:
 *   the issue's work item is created (source TRACKER, its URL, `IDENT: title`, the description as
 *   summary, the actor as requester), OPEN in INTAKE, and its intake run is queued.
 * - `Comment` created that mentions Bosun (`@<app_user_name>`) on an issue without a work item
 *   creates it the same way.
 * - A comment on an issue that has a work item is a follow-up of it (`features/workItems/FollowUps.ts`): an
 *   approval or rejection of its plan, or part of the conversation, which queues a new intake run
 *   behind the issue's running one.
 * - Bosun's own comments, other actions and issues that are not Bosun's are recorded as ignored,
 *   with why.
 *
 * Each delivery is applied once (`ProcessDelivery`).
 */
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import { Effect, Option, Schema } from "effect"
import { Sharding } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { makeFollowUps } from "../../features/workItems/FollowUps.ts"
import { WorkItemRuns } from "../../features/workItems/WorkItemRuns.ts"
import { WorkItemsRepo } from "../../features/workItems/WorkItemsRepo.ts"
import { LinearConnectionsRepo, type LinearIdentity } from "../../outbound/linear/LinearConnectionsRepo.ts"
import { contribute, InboxHandlers } from "../../platform/storage/OutboxHandlers.ts"
import { actedOn, processDeliveryOnce } from "../ProcessDelivery.ts"
import { LinearDeliveriesRepo, type LinearDelivery } from "./LinearDeliveriesRepo.ts"
import { LINEAR_DELIVERY_KIND } from "./LinearWebhooksHttp.ts"

const Actor = Schema.optional(Schema.NullOr(Schema.Struct({ name: Schema.optional(Schema.String) })))

const IssueData = Schema.Struct({
  id: Schema.String,
  identifier: Schema.optional(Schema.String),
  title: Schema.String,
  description: Schema.optional(Schema.NullOr(Schema.String)),
  url: Schema.optional(Schema.String),
  assigneeId: Schema.optional(Schema.NullOr(Schema.String))
})

const IssueEvent = Schema.Struct({
  action: Schema.String,
  data: IssueData,
  actor: Actor,
  url: Schema.optional(Schema.String),
  updatedFrom: Schema.optional(Schema.Record(Schema.String, Schema.Unknown))
})

const CommentEvent = Schema.Struct({
  action: Schema.String,
  actor: Actor,
  url: Schema.optional(Schema.String),
  data: Schema.Struct({
    id: Schema.String,
    body: Schema.String,
    issueId: Schema.String,
    userId: Schema.optional(Schema.NullOr(Schema.String)),
    issue: Schema.optional(
      Schema.Struct({
        id: Schema.String,
        identifier: Schema.optional(Schema.String),
        title: Schema.String,
        url: Schema.optional(Schema.String)
      })
    )
  })
})

const SUMMARY_LIMIT = 4000

/** `@name` as a word of its own, in any case (Linear writes mentions as `@name`). */
export const mentions = (body: string, name: string | null) => {
  if (name === null || name.length === 0) return false
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  return new RegExp(`(^|[^\\w@])@${escaped}(?![\\w-])`, "i").test(body)
}

export const makeLinearInboxHandler = Effect.gen(function* () {
  const deliveries = yield* LinearDeliveriesRepo
  const connections = yield* LinearConnectionsRepo
  const workItems = yield* WorkItemsRepo
  const workItemRuns = yield* WorkItemRuns
  const sql = yield* SqlClient.SqlClient
  const { followUp } = yield* makeFollowUps

  /** Queues the new item's intake run (in the delivery's transaction); null: the delivery was acted on. */
  const intake = (organizationId: string, id: string, sessionKey: string) =>
    workItemRuns.enqueueIntake(organizationId, { id, sessionKey, primaryRepositoryId: null }).pipe(Effect.as(null))

  const describe = (error: Schema.SchemaError) => `the payload is not a Linear event: ${error.message}`

  const issue = (delivery: LinearDelivery, me: LinearIdentity) =>
    Effect.gen(function* () {
      const decoded = yield* Effect.result(Schema.decodeUnknownEffect(IssueEvent)(delivery.payload))
      if (decoded._tag === "Failure") return describe(decoded.failure)
      const event = decoded.success
      const assigned = me.appUserId !== null && event.data.assigneeId === me.appUserId
      const newly =
        event.action === "create" ||
        (event.action === "update" && event.updatedFrom !== undefined && "assigneeId" in event.updatedFrom)
      if (!assigned || !newly) return "the issue was not just assigned to Bosun"
      const { item, created } = yield* workItems.forSession(delivery.organizationId, {
        kind: "TASK",
        source: "TRACKER",
        sessionKey: `linear:${event.data.id}`,
        title: titleOf(event.data.identifier, event.data.title),
        ...optional("summary", event.data.description?.slice(0, SUMMARY_LIMIT)),
        ...optional("sourceUrl", event.data.url ?? event.url),
        ...optional("requestedByLogin", event.actor?.name)
      })
      return created
        ? yield* intake(delivery.organizationId, item.id, `linear:${event.data.id}`)
        : `the issue already has work item ${item.id}`
    })

  const comment = (delivery: LinearDelivery, me: LinearIdentity) =>
    Effect.gen(function* () {
      const decoded = yield* Effect.result(Schema.decodeUnknownEffect(CommentEvent)(delivery.payload))
      if (decoded._tag === "Failure") return describe(decoded.failure)
      const event = decoded.success
      if (event.action !== "create") return `comment ${event.action} is not acted on`
      if (me.appUserId !== null && event.data.userId === me.appUserId) return "Bosun's own comment"
      const sessionKey = `linear:${event.data.issueId}`
      const [existing] = yield* sql<{ id: string }>`
        SELECT id FROM work_items WHERE organization_id = ${delivery.organizationId} AND session_key = ${sessionKey}`.pipe(
        Effect.orDie
      )
      if (existing !== undefined) {
        return yield* followUp(
          delivery.organizationId,
          { id: existing.id, sessionKey },
          { author: event.actor?.name ?? null, text: event.data.body, deliveryId: delivery.deliveryId }
        )
      }
      if (!mentions(event.data.body, me.appUserName)) return "the comment does not mention Bosun"
      const { item, created } = yield* workItems.forSession(delivery.organizationId, {
        kind: "TASK",
        source: "TRACKER",
        sessionKey,
        title: titleOf(event.data.issue?.identifier, event.data.issue?.title ?? event.data.body.slice(0, 120)),
        summary: event.data.body.slice(0, SUMMARY_LIMIT),
        ...optional("sourceUrl", event.data.issue?.url ?? event.url),
        ...optional("requestedByLogin", event.actor?.name)
      })
      return created
        ? yield* intake(delivery.organizationId, item.id, sessionKey)
        : `the issue already has work item ${item.id}`
    })

  const process = (delivery: LinearDelivery) =>
    Effect.gen(function* () {
      const me = yield* connections.identity(delivery.organizationId)
      if (Option.isNone(me)) return "the organization is no longer connected to Linear"
      switch (delivery.event) {
        case "Issue":
          return yield* issue(delivery, me.value)
        case "Comment":
          return yield* comment(delivery, me.value)
        default:
          return `event ${delivery.event} is not handled`
      }
    })

  const wake = Effect.provideService(wakeScheduler, Sharding.Sharding, yield* Sharding.Sharding)
  return yield* processDeliveryOnce(
    LINEAR_DELIVERY_KIND,
    "linear",
    deliveries,
    (delivery) => Effect.map(process(delivery), actedOn),
    wake
  )
})

const titleOf = (identifier: string | undefined, title: string) =>
  (identifier === undefined ? title : `${identifier}: ${title}`).slice(0, 500)

/** `{[key]: value}` when there is a value: the repo's optional fields take no `undefined`. */
const optional = <K extends string>(key: K, value: string | null | undefined) =>
  (value === undefined || value === null || value.length === 0 ? {} : { [key]: value }) as {
    readonly [P in K]?: string
  }

/** Adds the handler to the `bosun-inbox` registry. */
export const LinearInboxHandlersLive = contribute(
  InboxHandlers,
  Effect.map(makeLinearInboxHandler, (handler) => [handler])
)
