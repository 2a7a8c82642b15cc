/**
 * The "Test" of an agent connection and the first-day checklist. A test runs one minimal agent
 * turn (`ModelTurn`) on this server's runtime with the scope's credentials in force and the model
 * its configuration runs with, and keeps the result as the scope's last test. The checklist reads
 * what is there: the GitHub App, its installation, credentials, a model, a passing test.
 */
import { RuntimeClient } from "@bosun/actors/runtime/RuntimeClient"
import { ModelTurnResult, modelInForce, type SetupChecklist, type SetupStep } from "@bosun/domain"
import { Duration, Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { GithubAppsRepo } from "../../outbound/github/GithubAppsRepo.ts"
import { AgentRuntime } from "../../platform/runtime/AgentRuntime.ts"
import { RepositoriesRepo } from "../repositories/index.ts"
import { AgentConnectionsRepo } from "./AgentConnectionsRepo.ts"
import { ConfigurationRepo } from "./ConfigurationRepo.ts"
import { runModelTurn, turnRefused } from "./ModelTurn.ts"
import { makeRunSettings } from "./RunSettings.ts"

const decodeResult = Schema.decodeUnknownOption(ModelTurnResult)

export const makeConnectionTest = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const connections = yield* AgentConnectionsRepo
  const configurations = yield* ConfigurationRepo
  const apps = yield* GithubAppsRepo
  const repositories = yield* RepositoriesRepo
  const runtime = yield* AgentRuntime
  const runSettings = yield* makeRunSettings

  const last = Effect.fn("ConnectionTest.last")(function* (organizationId: string, repositoryId: string | null) {
    const [row] = yield* sql<{ result: unknown }>`
      SELECT result FROM model_turn_tests
      WHERE organization_id = ${organizationId} AND coalesce(repository_id, '') = ${repositoryId ?? ""}`.pipe(
      Effect.orDie
    )
    return row === undefined ? null : Option.getOrNull(decodeResult(row.result))
  })

  const run = Effect.fn("ConnectionTest.run")(function* (organizationId: string, repositoryId: string | null) {
    const own = repositoryId === null ? Option.none() : yield* connections.credentials(organizationId, repositoryId)
    const scope = Option.isSome(own) ? own : yield* connections.credentials(organizationId, null)
    const result = Option.isNone(scope)
      ? turnRefused("", "No agent credentials are connected: set an API key or import an OpenCode auth.json first")
      : // An admin waiting on the answer: a catalog still being discovered is said, not waited for.
        yield* runSettings.forRun(organizationId, repositoryId, Duration.zero).pipe(
          Effect.matchEffect({
            onFailure: (error) => Effect.succeed(turnRefused("", error.message)),
            onSuccess: (settings) =>
              runModelTurn({
                endpoint: runtime.endpoint,
                agent: settings.configuration.agent_provider,
                model: settings.model,
                ...(settings.reasoningEffort === undefined ? {} : { reasoningEffort: settings.reasoningEffort }),
                credentials: scope.value.credentials
                // A client of its own: a test is a rare, admin-started call, not worth a shared pool.
              }).pipe(Effect.provide(RuntimeClient.layer))
          })
        )
    yield* sql`
      INSERT INTO model_turn_tests (organization_id, repository_id, result, tested_at)
      VALUES (${organizationId}, ${repositoryId}, ${JSON.stringify(result)}::jsonb, now())
      ON CONFLICT (organization_id, coalesce(repository_id, ''))
      DO UPDATE SET result = excluded.result, tested_at = excluded.tested_at`.pipe(Effect.orDie)
    yield* (result.ok ? Effect.logInfo("model_turn_passed") : Effect.logWarning("model_turn_failed")).pipe(
      Effect.annotateLogs({
        organization_id: organizationId,
        repository_id: repositoryId,
        model: result.model,
        message: result.message
      })
    )
    return result
  })

  const checklist = Effect.fn("ConnectionTest.checklist")(function* (organizationId: string) {
    const slug = yield* apps.slug(organizationId)
    const connected = (yield* repositories.list(organizationId)).length
    const connection = yield* connections.view(organizationId, null)
    const configuration = yield* configurations.effective(organizationId, null)
    const discovered = connection.catalog.last_successful_at !== null
    const inForce = discovered ? modelInForce(connection.catalog.catalog, configuration.model) : null
    const tested = yield* last(organizationId, null)
    const steps: ReadonlyArray<SetupStep> = [
      Option.match(slug, {
        onNone: () => ({
          id: "github_app" as const,
          done: false,
          detail: "Create a GitHub App and give Bosun its credentials (PUT /api/v1/organizations/{id}/github-app)"
        }),
        onSome: (name) => ({ id: "github_app" as const, done: true, detail: `GitHub App ${name} is configured` })
      }),
      connected > 0
        ? {
            id: "app_installed",
            done: true,
            detail: `${connected} ${connected === 1 ? "repository is" : "repositories are"} connected`
          }
        : { id: "app_installed", done: false, detail: "Install the GitHub App on at least one repository" },
      connection.auth.configured
        ? {
            id: "agent_credentials",
            done: true,
            detail: `Credentials for ${connection.auth.provider_ids.join(", ")}`
          }
        : { id: "agent_credentials", done: false, detail: "Set an API key or import an OpenCode auth.json" },
      inForce !== null
        ? {
            id: "model_chosen",
            done: true,
            detail:
              configuration.model === "" ? `${inForce.id} (Bosun's default pick from the catalog)` : `${inForce.id}`
          }
        : {
            id: "model_chosen",
            done: false,
            detail: discovered
              ? configuration.model === ""
                ? "The catalog lists no model: check the credentials' providers"
                : `${configuration.model} is not in the catalog: choose another model`
              : "Waiting for the model catalog of the credentials (connect credentials first)"
          },
      tested?.ok === true
        ? { id: "test_turn", done: true, detail: `${tested.model} answered at ${tested.tested_at}` }
        : {
            id: "test_turn",
            done: false,
            detail: tested === null ? "Run the agent connection's Test" : `The last test failed: ${tested.message}`
          }
    ]
    return { steps, complete: steps.every((step) => step.done) } satisfies SetupChecklist
  })

  return { run, last, checklist }
})
