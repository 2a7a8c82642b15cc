/**
 * What every run of a work item (intake, implement) prepares the same way: the item
 * from the run's input, the effective configuration with the agent's credentials (the
 * repository's own connection, else the organization's), and a checkout of a repository's default
 * branch cloned with an installation token; and the report of a run that failed for good (the item
 * FAILED, the thread told why, in one transaction). Failures are the attempt's, with the codes the
 * run's error shows.
 */
import {
  AttemptError,
  type AttemptRun,
  type FailureReport,
  type PreparedAttempt
} from "@bosun/actors/attempt/AttemptPorts"
import type { Repository, RepositoryConfiguration, RunRepository, RunRequest } from "@bosun/domain"
import { Effect, Option, Redacted, Schema } from "effect"
import { GitHubApp } from "../../outbound/github/GitHubApp.ts"
import { githubAttemptError } from "../../outbound/github/GitHubAttemptError.ts"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { Outbox } from "../../platform/storage/Outbox.ts"
import {
  AgentConnectionsRepo,
  ConfigurationRepo,
  makeRunSettings,
  type RunSettings,
  teamInstructions
} from "../agentConnections/index.ts"
import { MemoriesRepo } from "../memories/index.ts"
import { cloneUrl, makeSecondaryCheckouts } from "./Checkouts.ts"
import { replyEffect } from "./WorkItemReplies.ts"
import { WorkItemsRepo } from "./WorkItemsRepo.ts"

export const fail = (code: string, message: string, retryable = false) => new AttemptError({ code, message, retryable })

export const CHECKOUT = "repo"

const Input = Schema.Struct({
  work_item_id: Schema.String,
  /** How many follow-ups there were when the run was queued: the conversation it answers. */
  conversation_length: Schema.optional(Schema.Int)
})

export const fullName = (repository: Repository) => `${repository.owner}/${repository.name}`

/**
 * The request of a work-item run as the attempt takes it: what every such run shares (the agent,
 * model, MCP servers and skills of the configuration, the team's instructions after the run's
 * own, the STRICT egress tier, credentials inline) around what the run itself says, on a
 * standard-2 sandbox of the configured provider.
 */
export const workItemAttempt = (
  settings: RunSettings,
  run: Pick<AttemptRun, "runId" | "attemptId">,
  own: Pick<RunRequest, "prompt" | "instructions" | "repositories" | "time_limit_seconds" | "provider_credentials">
): PreparedAttempt => {
  const { configuration } = settings
  const team = teamInstructions(configuration)
  const instructions = [own.instructions, team].filter((part) => part !== undefined && part !== null).join("\n\n")
  return {
    request: {
      run_id: run.runId,
      attempt_id: run.attemptId,
      agent: { kind: configuration.agent_provider },
      model: settings.model,
      ...(settings.reasoningEffort === undefined ? {} : { reasoning_effort: settings.reasoningEffort }),
      mcp_servers: settings.mcpServers,
      skills: settings.skills,
      egress_tier: "STRICT",
      credential_mode: "INLINE",
      ...own,
      ...(instructions === "" ? {} : { instructions })
    },
    sandbox: { provider: configuration.sandbox_provider, instanceClass: "standard-2", egressTier: "STRICT" },
    grants: [],
    model: settings.model,
    provider: configuration.agent_provider
  }
}

export const makeWorkItemRunSetup = Effect.gen(function* () {
  const config = yield* AppConfig
  const workItems = yield* WorkItemsRepo
  const configurations = yield* ConfigurationRepo
  const connections = yield* AgentConnectionsRepo
  const app = yield* GitHubApp
  const outbox = yield* Outbox
  const memories = yield* MemoriesRepo
  const { secondaryCheckouts } = yield* makeSecondaryCheckouts
  const runSettings = yield* makeRunSettings

  const itemOf = Effect.fnUntraced(function* (run: Pick<AttemptRun, "organizationId" | "inputSnapshot">) {
    const input = yield* Schema.decodeUnknownEffect(Input)(run.inputSnapshot).pipe(
      Effect.mapError(() => fail("work_item_missing", "The run names no work item"))
    )
    const found = yield* workItems.forRun(run.organizationId, input.work_item_id)
    if (Option.isNone(found)) return yield* fail("work_item_missing", "The work item of this run no longer exists")
    return { ...found.value, conversationLength: input.conversation_length ?? 0 }
  })

  /** The effective configuration and the agent's credentials for the run's repository (or the organization). */
  const agentOf = Effect.fnUntraced(function* (run: Pick<AttemptRun, "organizationId" | "repositoryId">) {
    const configuration = yield* configurations.effective(run.organizationId, run.repositoryId)
    if (configuration.sandbox_provider === "PLATFORM_CONTAINER") {
      return yield* fail(
        "credential_injection_unsupported",
        "Work-item runs do not run on PLATFORM_CONTAINER sandboxes yet: choose EXTERNAL_RUNTIME or a hosted sandbox provider"
      )
    }
    const own =
      run.repositoryId === null ? Option.none() : yield* connections.credentials(run.organizationId, run.repositoryId)
    const scope = Option.isSome(own) ? own : yield* connections.credentials(run.organizationId, null)
    if (Option.isNone(scope)) {
      return yield* fail(
        "agent_connection_missing",
        "No agent connection of this organization or repository has provider credentials"
      )
    }
    const settings = yield* runSettings.forRun(run.organizationId, run.repositoryId)
    return { configuration: settings.configuration, credentials: scope.value.credentials, settings }
  })

  /**
   * The instructions with the team's APPROVED, enabled memories for the run's repository (the
   * organization's and the repository's own), recorded as given to the run (agent prompts carry
   * them as review prompts do).
   */
  const withConventions = Effect.fnUntraced(function* (
    run: Pick<AttemptRun, "organizationId" | "repositoryId" | "runId" | "workflowType">,
    instructions: string
  ) {
    const given = yield* memories.forRun(run.organizationId, run.repositoryId, {
      runId: run.runId,
      workflowType: run.workflowType
    })
    if (given.length === 0) return instructions
    const listed = given
      .map((memory) => `- ${memory.convention}${memory.rationale === null ? "" : ` (why: ${memory.rationale})`}`)
      .join("\n")
    return `${instructions}\n\nConventions this team has approved (follow them in what you write and report):\n${listed}`
  })

  /**
   * The attempt with the configuration's approved secondary repositories checked out read-only
   * beside its own checkouts, and the agent told where they are.
   */
  const withSecondaryRepositories = Effect.fnUntraced(function* (
    organizationId: string,
    configuration: RepositoryConfiguration,
    attempt: PreparedAttempt
  ) {
    const secondary = yield* secondaryCheckouts(
      organizationId,
      configuration.secondary_repository_ids,
      attempt.request.repositories.map((repository) => repository.path)
    )
    if (secondary.note === null) return attempt
    return {
      ...attempt,
      request: {
        ...attempt.request,
        prompt: `${attempt.request.prompt}\n\n${secondary.note}`,
        repositories: [...attempt.request.repositories, ...secondary.repositories]
      }
    }
  })

  /** The repository's default branch (at `sha` when given), cloned with an installation token. */
  const checkoutOf = Effect.fnUntraced(function* (organizationId: string, repository: Repository, sha?: string) {
    const token = yield* app
      .installationToken(organizationId, { owner: repository.owner, name: repository.name })
      .pipe(Effect.mapError(githubAttemptError))
    return {
      id: repository.id,
      url: cloneUrl(config.githubApiUrl, repository.owner, repository.name),
      ref: repository.default_branch,
      ...(sha === undefined ? {} : { sha }),
      path: CHECKOUT,
      credential: Redacted.value(token)
    } satisfies RunRepository
  })

  /**
   * The run failed for good: the item is FAILED (while the run is still its active run) and the
   * thread or ticket is told `what` could not be done and why, keyed by the run.
   */
  const reportFailure = (report: FailureReport, what: string) =>
    Effect.gen(function* () {
      const found = yield* itemOf(report.run)
      const reply = replyEffect(
        report.run.organizationId,
        found.sessionKey,
        `I could not ${what}: ${report.error.message} (${report.error.code}). It can be retried from the Bosun dashboard.`,
        `work_item.failed:${report.run.runId}`
      )
      yield* outbox
        .transaction(
          Effect.gen(function* () {
            const updated = yield* workItems.recordRunFailed(report.run.organizationId, found.item.id, report.run.runId)
            if (Option.isNone(updated) || Option.isNone(reply)) return
            yield* outbox.write("bosun-effects", reply.value.kind, reply.value.payload)
          })
        )
        .pipe(Effect.mapError((error) => fail("failure_report_unrecorded", error.message, true)))
    })

  return { itemOf, agentOf, checkoutOf, withConventions, withSecondaryRepositories, reportFailure }
})
