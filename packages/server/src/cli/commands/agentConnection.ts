/**
 * `bosun agent-connection discover --org ORG [--repository ID]` (catalog discovery on demand):
 * queues a catalog discovery of one scope's agent connection — the organization's, or a
 * repository's own override — as a credential write does, for when a provider added models or a
 * discovery failed for a reason that has since gone away. The CLI is no cluster runner, so it does
 * not wake the Scheduler: a running server claims the run at its next tick
 * (`BOSUN_SCHEDULER_IDLE_TICK`, 5 s). Audited.
 */
import { PathId } from "@bosun/domain"
import { Console, Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { SqlClient } from "effect/sql"
import { AgentConnectionsRepo } from "../../features/agentConnections/AgentConnectionsRepo.ts"
import { RepositoriesRepo } from "../../features/repositories/RepositoriesRepo.ts"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { CliFailure } from "../CliFailure.ts"

export const discover = Command.make(
  "discover",
  {
    org: Flag.String("org").pipe(Flag.withSchema(PathId), Flag.withDescription("The organization id")),
    repository: Flag.String("repository").pipe(
      Flag.withSchema(PathId),
      Flag.optional,
      Flag.withDescription("A repository id: its own agent connection instead of the organization's")
    )
  },
  Effect.fn(function* ({ org, repository }) {
    const connections = yield* AgentConnectionsRepo
    const repositories = yield* RepositoriesRepo
    const audit = yield* AuditLog
    const sql = yield* SqlClient.SqlClient
    const repositoryId = Option.getOrNull(repository)
    if (repositoryId !== null && Option.isNone(yield* repositories.find(org, repositoryId))) {
      return yield* new CliFailure({ message: `organization ${org} has no repository ${repositoryId}` })
    }
    const queued = yield* sql
      .withTransaction(
        Effect.gen(function* () {
          const discovery = yield* connections.queueDiscovery(org, repositoryId)
          if (Option.isSome(discovery)) {
            yield* audit.record({
              organizationId: org,
              actor: { kind: "operator" },
              action: "agent_connection.discover",
              target: repositoryId === null ? "agent_connection:organization" : `agent_connection:${repositoryId}`,
              details: { discovery_id: discovery.value.id, workflow_run_id: discovery.value.workflowRunId }
            })
          }
          return discovery
        })
      )
      .pipe(Effect.orDie)
    if (Option.isNone(queued)) {
      return yield* new CliFailure({
        message:
          repositoryId === null
            ? `organization ${org} has no agent-connection credentials of its own to discover with`
            : `repository ${repositoryId} has no agent-connection credentials of its own (it inherits the organization's: discover without --repository)`
      })
    }
    yield* Console.log(
      `catalog discovery ${queued.value.id} queued as workflow run ${queued.value.workflowRunId ?? ""}; a running server starts it within its Scheduler tick`
    )
  })
).pipe(Command.withDescription("Queue a catalog discovery of an agent connection"))
