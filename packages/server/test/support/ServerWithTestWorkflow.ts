/**
 * The production server (`makeServerLive`, as `npm start` builds it) in a process of its own, with
 * production's workflow types and one more registered through the port: `test_echo`, which runs the CUSTOM runtime
 * profile its run's input names and publishes one row per attempt into `test_published` (the
 * test creates that table); its sandbox is the provider the input's `sandbox_provider` names
 * (EXTERNAL_RUNTIME by default). `TEST_PUBLISH_DELAY_MS` holds the publish step open after its write,
 * so a test can kill the process mid-publish. Everything else is configured by the environment,
 * as for the real server. For the durability and several-runner tests.
 */
import type { WorkflowType } from "@bosun/actors/attempt/AttemptPorts"
import type { SandboxProviderName } from "@bosun/actors/sandbox/SandboxProvider"
import type { RunRequest } from "@bosun/domain"
import { layerJsonLogger } from "@bosun/platform/JsonLogger"
import { NodeRuntime } from "@effect/platform-node"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { layerWorkflowTypes, productionWorkflowTypes } from "../../src/app/cluster/WorkflowTypesLive.ts"
import { makeServerLive } from "../../src/app/Server.ts"

const repoUrl = process.env.TEST_REPO_URL ?? ""
const publishDelay = Number(process.env.TEST_PUBLISH_DELAY_MS ?? 0)

const testEcho = (sql: SqlClient.SqlClient): WorkflowType => ({
  lane: "AGENT",
  outputs: [],
  prepare: (run) =>
    Effect.succeed({
      request: {
        run_id: run.runId,
        attempt_id: run.attemptId,
        agent: { kind: "CUSTOM", profile: String(run.inputSnapshot.profile) },
        model: "fake/model",
        prompt: "do the work",
        repositories: [{ id: "repo-1", url: repoUrl, ref: "main", path: "app", credential: null }],
        mcp_servers: [],
        skills: [],
        egress_tier: "STRICT",
        time_limit_seconds: 120,
        credential_mode: "INLINE",
        provider_credentials: {}
      } as unknown as RunRequest,
      sandbox: {
        provider: (run.inputSnapshot.sandbox_provider ?? "EXTERNAL_RUNTIME") as SandboxProviderName,
        instanceClass: "standard-2",
        egressTier: "STRICT"
      },
      grants: [],
      model: "fake/model",
      provider: "fake"
    }),
  publish: ({ run, result }) =>
    Effect.gen(function* () {
      yield* sql`INSERT INTO test_published (run_id, attempt_id, status, pid)
                 VALUES (${run.runId}, ${run.attemptId}, ${result.status}, ${process.pid})
                 ON CONFLICT (attempt_id) DO NOTHING`.pipe(Effect.orDie)
      if (publishDelay > 0) yield* Effect.sleep(Duration.millis(publishDelay))
    })
})

const server = makeServerLive(
  layerWorkflowTypes(
    Effect.all([productionWorkflowTypes, SqlClient.SqlClient]).pipe(
      Effect.map(([production, sql]) => ({ ...production, test_echo: testEcho(sql) }))
    )
  )
)

Layer.launch(server).pipe(Effect.provide(layerJsonLogger()), NodeRuntime.runMain)
