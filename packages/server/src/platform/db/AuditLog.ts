/**
 * Audit evidence (docs/interface.md: Resources, "audit evidence"): one row per privileged action —
 * credential writes, configuration changes, approvals, work-item actions, key rotation — saying
 * who, what, on which target, when and under which request id. Details never hold a secret value:
 * callers pass ids, names and fingerprints only.
 */

import { RequestContext } from "@bosun/platform/RequestContext"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient, SqlError } from "effect/sql"

/**
 * Who acted: an operator (bootstrap token, CLI), a signed-in user, or a provider's user with no
 * Bosun account (a Slack button, a reply in a thread), named `{provider}:{workspace}:{user}`.
 */
export type AuditActor =
  | { readonly kind: "operator" }
  | { readonly kind: "user"; readonly userId: string }
  | { readonly kind: "provider_user"; readonly external: string }

export interface AuditEvent {
  readonly organizationId: string | null
  readonly actor: AuditActor
  readonly action: string
  readonly target: string | null
  readonly details?: Readonly<Record<string, string | number | boolean | null>>
}

export class AuditLog extends Context.Service<
  AuditLog,
  {
    /** Records the event, in the caller's transaction when there is one. */
    readonly record: (event: AuditEvent) => Effect.Effect<void>
    /**
     * Runs a write that finds its target or not in one transaction with its audit event: the
     * event is recorded only when the target was found (and `event` names one: an outcome that
     * changed nothing answers undefined). Database failures are defects.
     */
    readonly audited: <A, E, R>(
      write: Effect.Effect<Option.Option<A>, E, R>,
      event: (written: A) => AuditEvent | undefined
    ) => Effect.Effect<Option.Option<A>, E, R>
  }
>()("bosun/server/persistence/AuditLog") {
  static readonly layer = Layer.effect(
    AuditLog,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const record = Effect.fn("AuditLog.record")(function* (event: AuditEvent) {
        const request = yield* Effect.serviceOption(RequestContext)
        const requestId = request._tag === "Some" ? request.value.requestId : null
        yield* sql`
            INSERT INTO audit_events
              (organization_id, actor_kind, actor_user_id, actor_external, action, target, request_id, details)
            VALUES (${event.organizationId}, ${event.actor.kind},
                    ${event.actor.kind === "user" ? event.actor.userId : null},
                    ${event.actor.kind === "provider_user" ? event.actor.external.slice(0, 256) : null},
                    ${event.action}, ${event.target}, ${requestId}, ${JSON.stringify(event.details ?? {})}::jsonb)`.pipe(
          Effect.orDie
        )
      })
      return AuditLog.of({
        record,
        audited: <A, E, R>(
          write: Effect.Effect<Option.Option<A>, E, R>,
          event: (written: A) => AuditEvent | undefined
        ) =>
          sql
            .withTransaction(
              Effect.tap(write, (written) => {
                const happened = Option.isSome(written) ? event(written.value) : undefined
                return happened === undefined ? Effect.void : record(happened)
              })
            )
            .pipe(
              Effect.catchIf(
                (error): error is SqlError.SqlError => SqlError.isSqlError(error),
                (error) => Effect.die(error)
              )
            )
      })
    })
  )
}
