/**
 * `bosun doctor`, the model check: for every organization with agent credentials of its own, one
 * minimal agent turn (`ModelTurn`) with those credentials and the model its configuration runs
 * with — the configured one or Bosun's default pick from the catalog — on the runtime at
 * `BOSUN_RUNTIME_URL`, or on an embedded runtime doctor starts for the purpose (in a temporary
 * directory, stopped after). One line per organization: the model answered, or the provider's
 * own words (a wrong key, an unknown model, an exhausted quota). It changes nothing stored.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { RuntimeClient, type RuntimeEndpoint } from "@bosun/actors/runtime/RuntimeClient"
import { Duration, Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AgentConnectionsRepo } from "../../features/agentConnections/AgentConnectionsRepo.ts"
import { MODEL_TURN_TIMEOUT, runModelTurn } from "../../features/agentConnections/ModelTurn.ts"
import { makeRunSettings } from "../../features/agentConnections/RunSettings.ts"
import type { AppSettings } from "../../platform/config/AppConfig.ts"
import { launchEmbedded } from "../../platform/runtime/AgentRuntime.ts"
import { CheckFailed, failed, runCheck, skipped } from "./CheckResult.ts"

export const MODEL_TURN = "Model turn"

const nameOf = (organizationId: string) => `${MODEL_TURN} (${organizationId})`

/** The runtime the turns run on: the operator's, or an embedded one of doctor's own for this scope. */
const runtimeFor = (settings: AppSettings) =>
  Option.match(settings.runtime.external, {
    onSome: ({ url, token }): Effect.Effect<RuntimeEndpoint> => Effect.succeed({ baseUrl: url, token }),
    onNone: () =>
      Effect.gen(function* () {
        const dir = yield* Effect.acquireRelease(
          Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "bosun-doctor-runtime-"))),
          (created) => Effect.promise(() => fs.rm(created, { recursive: true, force: true }))
        )
        return yield* launchEmbedded({
          port: 0,
          dataDir: path.join(dir, "runtime"),
          workspacesDir: path.join(dir, "workspaces"),
          logs: process.stderr
        })
      })
  })

const turnOf = (organizationId: string, endpoint: RuntimeEndpoint) =>
  Effect.gen(function* () {
    const credentials = yield* (yield* AgentConnectionsRepo).credentials(organizationId, null)
    if (Option.isNone(credentials)) {
      return yield* new CheckFailed({
        message: "its credentials were removed while doctor ran",
        fix: "run doctor again"
      })
    }
    // Doctor reports what is there: a catalog still being discovered is not waited for.
    const settings = yield* (yield* makeRunSettings).forRun(organizationId, null, Duration.zero).pipe(
      Effect.mapError(
        (error) =>
          new CheckFailed({
            message: error.message,
            fix: `choose a model for ${organizationId} (PUT /api/v1/organizations/${organizationId}/configuration) or let its catalog be discovered`
          })
      )
    )
    const result = yield* runModelTurn({
      endpoint,
      agent: settings.configuration.agent_provider,
      model: settings.model,
      ...(settings.reasoningEffort === undefined ? {} : { reasoningEffort: settings.reasoningEffort }),
      credentials: credentials.value.credentials
    })
    if (!result.ok) {
      return yield* new CheckFailed({
        message: `${result.model} did not answer (after ${(result.duration_ms / 1000).toFixed(1)} s): ${result.message}`,
        fix: `check ${organizationId}'s agent credentials (the key, the model, the provider's quota) and its model, then run the connection's Test in the dashboard`
      })
    }
    return `${result.model} answered in ${(result.duration_ms / 1000).toFixed(1)} s`
  })

/** One line per organization with credentials of its own; one skipped line when there is none. */
export const checkModelTurns = Effect.fn("Doctor.modelTurns")(function* (settings: AppSettings) {
  const sql = yield* SqlClient.SqlClient
  const organizations = yield* sql<{ organization_id: string }>`
    SELECT organization_id FROM agent_connections WHERE repository_id IS NULL ORDER BY organization_id`.pipe(
    Effect.orDie
  )
  if (organizations.length === 0) {
    return [skipped(MODEL_TURN, "no organization has agent credentials (nothing to try a model with)")]
  }
  const started = yield* Effect.result(runtimeFor(settings))
  if (started._tag === "Failure") {
    return [
      failed(
        MODEL_TURN,
        new CheckFailed({
          message: `could not start an agent runtime for the turn: ${started.failure.message}`,
          fix: "read the runtime's lines above; `npm run runtime` starts one by hand"
        })
      )
    ]
  }
  const endpoint = started.success
  // Side by side (a few at a time): one slow provider must not hold up every other line.
  return yield* Effect.forEach(
    organizations,
    ({ organization_id }) =>
      runCheck(nameOf(organization_id), turnOf(organization_id, endpoint), {
        timeout: Duration.sum(MODEL_TURN_TIMEOUT, Duration.seconds(15)),
        onTimeout: "the model or the runtime is too slow to answer one word: check the provider's status"
      }),
    { concurrency: 4 }
  ).pipe(Effect.provide(RuntimeClient.layer))
}, Effect.scoped)
