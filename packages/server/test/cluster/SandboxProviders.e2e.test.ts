/**
 * The production server's sandbox providers, configured by environment as the Helm chart does it
 * (`platform/config/SandboxConfig.ts`, `app/cluster/AttemptPortsLive.ts`): one server process with
 * EXTERNAL_RUNTIME (a runtime process), PLATFORM_CONTAINER (a local fake of the Kubernetes Pods
 * API that starts the real runtime for each pod, reached through the official client) and
 * HOSTED_SANDBOX (a local fake of the hosted-sandbox API, likewise). One run on each provider
 * goes through every step; each sandbox is made with the configured settings and is gone once
 * the attempt ends. A provider that is not configured fails its run as such.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { generateCa } from "@bosun/actors/sandbox/InjectionProxy"
import { podNameOf } from "@bosun/actors/sandbox/PlatformContainer"
import { eventually, freshDatabase } from "@bosun/testing"
import { type FakeKubernetesApi, startFakeKubernetesApi } from "@bosun/testing/FakeKubernetesApi"
import { type FakeSandboxApi, startFakeSandboxApi } from "@bosun/testing/FakeSandboxApi"
import { freePort, makeFixtures, type RuntimeProcess, startRuntime, TOKEN } from "@bosun/testing/RuntimeProcess"
import { PgClient } from "@effect/sql-pg"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { spawnServer, untilReady } from "../support/Process.ts"
import { enqueueRun } from "../support/RunQueueCalls.ts"

const script = fileURLToPath(new URL("../support/ServerWithTestWorkflow.ts", import.meta.url))
const fixtures = makeFixtures()

const NAMESPACE = "bosun-sandboxes"
const KUBE_TOKEN = "kube-api-token-71c0e2a9d4"
const POD_RUNTIME_TOKEN = "pod-runtime-token-4b8e0f2c6a"
const SANDBOX_API_KEY = "dtn_fake-hosted-sandbox-key-5f3a9c1e7b"
const SANDBOX_RUNTIME_TOKEN = "hosted-runtime-token-9d2b6e4f0a"
const SNAPSHOT = "bosun-runtime-test"
const STRICT_CIDRS = "140.82.112.0/20"

const agents = JSON.stringify({ quick: { command: [fixtures.script("quick.sh", `echo '{"type":"done"}'`)] } })

let runtime: RuntimeProcess
let kubernetes: FakeKubernetesApi
let hosted: FakeSandboxApi
let ca: { certificate: string; privateKey: string }

beforeAll(async () => {
  ca = await generateCa("Bosun e2e egress CA")
  runtime = await startRuntime({
    BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "data"),
    BOSUN_RUNTIME_AGENTS: agents
  })
  kubernetes = await startFakeKubernetesApi({
    token: KUBE_TOKEN,
    namespaces: [NAMESPACE],
    secrets: [{ namespace: NAMESPACE, name: "bosun-runtime-token", stringData: { token: POD_RUNTIME_TOKEN } }],
    configMaps: [{ namespace: NAMESPACE, name: "bosun-egress-ca", data: { "ca.crt": ca.certificate } }],
    runtimeEnv: { BOSUN_RUNTIME_AGENTS: agents }
  })
  hosted = await startFakeSandboxApi({
    apiKey: SANDBOX_API_KEY,
    snapshots: [SNAPSHOT],
    env: { BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "sandboxes"), BOSUN_RUNTIME_AGENTS: agents }
  })
})
afterAll(async () => {
  await Promise.all([runtime?.stop(), kubernetes?.close(), hosted?.close()])
})

/** Every secret the server was given: none may reach its output. */
const secrets = [KUBE_TOKEN, POD_RUNTIME_TOKEN, SANDBOX_API_KEY, SANDBOX_RUNTIME_TOKEN, "proxy-derivation-key-62e1d0"]

const runStatus = (sql: SqlClient.SqlClient, runId: string) =>
  Effect.map(
    sql<{
      status: string
      error_code: string | null
    }>`SELECT status, error_code FROM workflow_runs WHERE id = ${runId}`,
    (rows) => rows[0]
  )

/** A fresh database and the server with the runtime and `env` on it, a SqlClient, and runs to enqueue. */
const serverWith = (env: (ports: { readonly proxy: number; readonly podRuntime: number }) => Record<string, string>) =>
  Effect.gen(function* () {
    const database = yield* freshDatabase
    const dataDir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "bosun-sandboxes-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const port = yield* Effect.promise(freePort)
    const proxyPort = yield* Effect.promise(freePort)
    const podRuntimePort = yield* Effect.promise(freePort)
    const server = yield* spawnServer(
      {
        DATABASE_URL: database.url,
        BOSUN_MASTER_KEY: randomBytes(32).toString("base64"),
        BOSUN_DATA_DIR: dataDir,
        BOSUN_PORT: String(port),
        BOSUN_RUNNER_PORT: String(yield* Effect.promise(freePort)),
        BOSUN_RUNTIME_URL: runtime.base,
        BOSUN_RUNTIME_TOKEN: TOKEN,
        BOSUN_SCHEDULER_IDLE_TICK: "300 millis",
        BOSUN_EVENT_FLUSH_INTERVAL: "200 millis",
        TEST_REPO_URL: fixtures.repoUrl,
        ...env({ proxy: proxyPort, podRuntime: podRuntimePort })
      },
      script
    )
    yield* untilReady(server, port)
    const sqlContext = yield* Layer.build(
      PgClient.layer({ url: Redacted.make(database.url), maxConnections: 2 }).pipe(Layer.orDie)
    )
    const sql = yield* Effect.provide(SqlClient.SqlClient, sqlContext)
    yield* sql`CREATE TABLE IF NOT EXISTS test_published (run_id text, attempt_id text PRIMARY KEY, status text, pid integer)`
    const [org] = yield* sql<{ id: string }>`INSERT INTO organizations (name) VALUES ('sandboxes') RETURNING id`
    const enqueue = (provider: string) =>
      Effect.provideService(
        enqueueRun({
          organizationId: org?.id ?? "",
          repositoryId: null,
          workflowType: "test_echo",
          lane: "AGENT",
          inputSnapshot: { profile: "quick", sandbox_provider: provider },
          maxAttempts: 1
        }),
        SqlClient.SqlClient,
        sql
      )
    const finished = (runId: string) =>
      eventually(
        runStatus(sql, runId),
        (row) => row?.status === "SUCCEEDED" || row?.status === "FAILED",
        Duration.seconds(90)
      )
    return { server, sql, enqueue, finished, proxyPort }
  })

describe("sandbox providers configured by environment", () => {
  it.live(
    "one server runs an attempt on each of EXTERNAL_RUNTIME, PLATFORM_CONTAINER and HOSTED_SANDBOX, each sandbox made as configured and gone when the attempt ends",
    () =>
      Effect.gen(function* () {
        const { server, sql, enqueue, finished, proxyPort } = yield* serverWith((ports) => ({
          // PLATFORM_CONTAINER, with the names the Helm chart sets.
          BOSUN_KUBERNETES_API_URL: kubernetes.url,
          BOSUN_KUBERNETES_TOKEN: KUBE_TOKEN,
          BOSUN_PLATFORM_CONTAINER_NAMESPACE: NAMESPACE,
          BOSUN_PLATFORM_CONTAINER_IMAGE: "ghcr.io/bosun/runtime:e2e",
          BOSUN_PLATFORM_CONTAINER_SERVICE_ACCOUNT: "bosun-sandbox",
          BOSUN_PLATFORM_CONTAINER_RUNTIME_PORT: String(ports.podRuntime),
          BOSUN_PLATFORM_CONTAINER_INSTANCE_CLASSES: JSON.stringify({
            "standard-2": { cpu: "1500m", memory: "3Gi" },
            "standard-4": { cpu: "4", memory: "8Gi" }
          }),
          BOSUN_PLATFORM_CONTAINER_READINESS_TIMEOUT: "30 seconds",
          BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN_SECRET: "bosun-runtime-token",
          BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN: POD_RUNTIME_TOKEN,
          BOSUN_PLATFORM_CONTAINER_CA_CONFIGMAP: "bosun-egress-ca",
          BOSUN_EGRESS_PROXY_PORT: String(ports.proxy),
          BOSUN_EGRESS_PROXY_CA_CERTIFICATE: ca.certificate,
          BOSUN_EGRESS_PROXY_CA_KEY: ca.privateKey,
          BOSUN_EGRESS_PROXY_SECRET_KEY: "proxy-derivation-key-62e1d0",
          BOSUN_EGRESS_TIERS: JSON.stringify({ STRICT: ["api.github.com"] }),
          // HOSTED_SANDBOX.
          BOSUN_HOSTED_SANDBOX_API_URL: hosted.url,
          BOSUN_HOSTED_SANDBOX_API_KEY: SANDBOX_API_KEY,
          BOSUN_HOSTED_SANDBOX_SNAPSHOT: SNAPSHOT,
          BOSUN_HOSTED_SANDBOX_RUNTIME_TOKEN: SANDBOX_RUNTIME_TOKEN,
          BOSUN_HOSTED_SANDBOX_NETWORK_ALLOW_LIST: JSON.stringify({ STRICT: STRICT_CIDRS }),
          BOSUN_HOSTED_SANDBOX_READINESS_TIMEOUT: "30 seconds"
        }))
        const external = yield* enqueue("EXTERNAL_RUNTIME")
        const container = yield* enqueue("PLATFORM_CONTAINER")
        const sandbox = yield* enqueue("HOSTED_SANDBOX")

        for (const run of [external, container, sandbox]) yield* finished(run.runId)
        const statuses = yield* Effect.forEach([external, container, sandbox], (run) => runStatus(sql, run.runId))
        assert.deepStrictEqual(
          statuses.map((row) => row?.status),
          ["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"],
          JSON.stringify(statuses)
        )
        const attempts = yield* sql<{ run_id: string; sandbox_provider: string; sandbox_id: string | null }>`
          SELECT run_id, sandbox_provider, sandbox_id FROM workflow_attempts ORDER BY started_at`
        const providerOf = (runId: string) => attempts.find((attempt) => attempt.run_id === runId)?.sandbox_provider
        assert.deepStrictEqual(
          [providerOf(external.runId), providerOf(container.runId), providerOf(sandbox.runId)],
          ["EXTERNAL_RUNTIME", "PLATFORM_CONTAINER", "HOSTED_SANDBOX"]
        )
        const published = yield* sql<{ run_id: string }>`SELECT run_id FROM test_published ORDER BY run_id`
        assert.sameMembers(
          published.map((row) => row.run_id),
          [external.runId, container.runId, sandbox.runId]
        )

        // PLATFORM_CONTAINER: one pod, as configured, deleted once the attempt ended.
        const podName = podNameOf(`${container.runId}:1`)
        const pods = kubernetes.createdPods.filter((pod) => pod.metadata.name === podName)
        assert.lengthOf(pods, 1)
        const pod = pods[0]
        assert.strictEqual(pod?.metadata.namespace, NAMESPACE)
        const spec = pod?.spec as
          | {
              serviceAccountName?: string
              containers?: ReadonlyArray<{ image?: string; resources?: { limits?: Record<string, string> } }>
            }
          | undefined
        assert.strictEqual(spec?.serviceAccountName, "bosun-sandbox")
        assert.strictEqual(spec?.containers?.[0]?.image, "ghcr.io/bosun/runtime:e2e")
        assert.deepStrictEqual(spec?.containers?.[0]?.resources?.limits, { cpu: "1500m", memory: "3Gi" })
        assert.notInclude(
          JSON.stringify(pod),
          POD_RUNTIME_TOKEN,
          "the runtime token comes from the Secret, not the spec"
        )
        assert.isUndefined(kubernetes.pod(NAMESPACE, podName), "the pod is deleted once the attempt ended")
        assert.isAtLeast(kubernetes.runtimes.length, 1)

        // HOSTED_SANDBOX: one sandbox from the snapshot with the tier's allow list, deleted after.
        const creates = hosted.creates.filter((create) => create.labels["bosun.attempt"] === `${sandbox.runId}:1`)
        assert.lengthOf(creates, 1)
        assert.strictEqual(creates[0]?.snapshot, SNAPSHOT)
        assert.strictEqual(creates[0]?.networkAllowList, STRICT_CIDRS)
        assert.deepStrictEqual(
          hosted.sandboxes().filter((view) => view.labels["bosun.attempt"] === `${sandbox.runId}:1`),
          [],
          "the sandbox is deleted once the attempt ended"
        )

        // The egress proxy listens where it was told to, and lets nobody through without credentials.
        const proxyAnswer = yield* Effect.promise(
          () =>
            new Promise<number>((resolve) => {
              const request = http.get(
                { host: "127.0.0.1", port: proxyPort, path: "http://api.github.com/", timeout: 5_000 },
                (response) => {
                  response.resume()
                  resolve(response.statusCode ?? 0)
                }
              )
              request.on("error", () => resolve(0))
            })
        )
        assert.strictEqual(proxyAnswer, 407, `the egress proxy on BOSUN_EGRESS_PROXY_PORT: ${server.stdout()}`)
        assert.include(server.stdout(), '"providers":["EXTERNAL_RUNTIME","PLATFORM_CONTAINER","HOSTED_SANDBOX"]')

        const output = server.stdout() + server.stderr()
        for (const secret of secrets) assert.notInclude(output, secret)
      }),
    { timeout: 180_000 }
  )
  it.live(
    "a run on a provider this instance has not configured fails at once as sandbox_provider_unconfigured",
    () =>
      Effect.gen(function* () {
        const { server, sql, enqueue, finished } = yield* serverWith(() => ({}))
        const run = yield* enqueue("PLATFORM_CONTAINER")
        yield* finished(run.runId)
        assert.deepStrictEqual(yield* runStatus(sql, run.runId), {
          status: "FAILED",
          error_code: "sandbox_provider_unconfigured"
        })
        assert.include(server.stdout(), '"providers":["EXTERNAL_RUNTIME"]')
        assert.lengthOf(yield* sql`SELECT 1 FROM test_published`, 0, "nothing was published")
      }),
    { timeout: 120_000 }
  )
})
