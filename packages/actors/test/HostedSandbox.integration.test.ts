/**
 * HOSTED_SANDBOX against a local fake of the Daytona REST API (`@bosun/testing/FakeSandboxApi`),
 * driven by the official client: what a create asks for (image, resources, env, labels, the
 * tier's network allow list), a run of the real runtime through the preview gateway, acquire
 * idempotent by attempt, release twice, and how the API's refusals and outages surface.
 */
import * as path from "node:path"
import { type FakeSandboxApi, startFakeSandboxApi } from "@bosun/testing/FakeSandboxApi"
import { freePort, isAlive, makeFixtures, runRequest } from "@bosun/testing/RuntimeProcess"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer, Redacted, Stream } from "effect"
import { RuntimeClient } from "../src/runtime/RuntimeClient.ts"
import { type HostedSandboxSettings, layerHostedSandbox } from "../src/sandbox/HostedSandbox.ts"
import { SandboxProvider, type SandboxSpec } from "../src/sandbox/SandboxProvider.ts"

const API_KEY = "dtn_fake-hosted-sandbox-key-0123456789abcdef"
const RUNTIME_TOKEN = "instance-scoped-runtime-token-0123456789"
const SNAPSHOT = "bosun-runtime-1.0"
const STRICT = "140.82.112.0/20,104.16.0.0/13"

const fixtures = makeFixtures()
let fake: FakeSandboxApi

beforeAll(async () => {
  fake = await startFakeSandboxApi({
    apiKey: API_KEY,
    snapshots: [SNAPSHOT],
    env: {
      BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "sandboxes"),
      BOSUN_RUNTIME_AGENTS: JSON.stringify({
        writer: {
          command: [
            fixtures.script("writer.sh", `echo "written in a sandbox" >> app/README.md\necho '{"type":"done"}'`)
          ]
        }
      })
    }
  })
})
afterAll(async () => {
  await fake?.close()
})

const settings = (overrides: Partial<HostedSandboxSettings> = {}): HostedSandboxSettings => ({
  apiUrl: new URL(fake.url),
  apiKey: Redacted.make(API_KEY),
  runtimeImage: { snapshot: SNAPSHOT },
  runtimeToken: Redacted.make(RUNTIME_TOKEN),
  // Spaces after commas, as an operator may write them: sent to the API without.
  networkAllowList: { STRICT: STRICT.replace(",", ", "), BUILD: "0.0.0.0/0", DEEP_SCAN: "" },
  readinessTimeout: Duration.seconds(30),
  ...overrides
})

const hosted = (overrides: Partial<HostedSandboxSettings> = {}) =>
  Effect.provide(layerHostedSandbox(settings(overrides)).pipe(Layer.provideMerge(RuntimeClient.layer)))

const spec = (attemptId: string, overrides: Partial<SandboxSpec> = {}): SandboxSpec => ({
  organizationId: "org-1",
  runId: attemptId.split(":")[0] ?? attemptId,
  attemptId,
  instanceClass: "standard-2",
  egressTier: "STRICT",
  agent: "CUSTOM",
  grants: [],
  ...overrides
})

const createsFor = (attemptId: string) => fake.creates.filter((create) => create.labels["bosun.attempt"] === attemptId)
const live = (id: string) => fake.sandboxes().find((sandbox) => sandbox.id === id)

describe("HOSTED_SANDBOX", () => {
  it.live(
    "acquire creates one sandbox with the tier's allow list and the class's resources, and its runtime runs an attempt through the preview gateway",
    () =>
      Effect.gen(function* () {
        const sandboxes = yield* SandboxProvider
        assert.strictEqual(sandboxes.name, "HOSTED_SANDBOX")
        const sandbox = yield* sandboxes.acquire(spec("hosted-run:1", { instanceClass: "standard-4" }))

        assert.strictEqual(sandbox.provider, "HOSTED_SANDBOX")
        assert.strictEqual(sandbox.credentialMode, "INLINE")
        assert.strictEqual(live(sandbox.id)?.state, "started")
        assert.strictEqual(sandbox.endpoint.baseUrl.href, `${fake.gatewayUrl}/8787-${sandbox.id}`)
        assert.strictEqual(Redacted.value(sandbox.endpoint.token), RUNTIME_TOKEN)
        assert.deepStrictEqual(Object.keys(sandbox.endpoint.headers ?? {}), ["x-daytona-preview-token"])

        const creates = createsFor("hosted-run:1")
        assert.strictEqual(creates.length, 1)
        const create = creates[0]
        assert.strictEqual(create?.image, SNAPSHOT)
        assert.strictEqual(create?.snapshot, SNAPSHOT)
        assert.strictEqual(create?.dockerfile, undefined)
        assert.strictEqual(create?.cpu, 4)
        assert.strictEqual(create?.memory, 8)
        assert.strictEqual(create?.disk, 10)
        assert.strictEqual(create?.networkAllowList, STRICT)
        assert.strictEqual(create?.networkBlockAll, false)
        assert.strictEqual(create?.public, false)
        assert.strictEqual(create?.autoStopInterval, 60)
        assert.strictEqual(create?.autoDeleteInterval, 0)
        assert.deepStrictEqual(create?.labels, {
          "bosun.attempt": "hosted-run:1",
          "bosun.run": "hosted-run",
          "bosun.organization": "org-1"
        })
        assert.deepStrictEqual(Object.keys(create?.env ?? {}).sort(), [
          "BOSUN_RUNTIME_HOST",
          "BOSUN_RUNTIME_PORT",
          "BOSUN_RUNTIME_TOKEN"
        ])
        assert.strictEqual(create?.env.BOSUN_RUNTIME_HOST, "0.0.0.0")
        assert.strictEqual(create?.env.BOSUN_RUNTIME_PORT, "8787")
        assert.strictEqual(create?.env.BOSUN_RUNTIME_TOKEN, RUNTIME_TOKEN)

        const connection = (yield* RuntimeClient).connect(sandbox.endpoint)
        const request = runRequest(fixtures, {
          run_id: "hosted-run",
          attempt_id: "hosted-run:1",
          agent: { kind: "CUSTOM", profile: "writer" },
          credential_mode: sandbox.credentialMode
        }) as unknown as Parameters<typeof connection.start>[0]
        const started = yield* connection.start(request)
        assert.isTrue(started.created)
        const lines = yield* Stream.runCollect(connection.events("hosted-run:1", 0))
        const events = lines.flatMap((line) => ("seq" in line ? [line] : []))
        assert.deepStrictEqual(
          events.map((event) => event.seq),
          Array.from({ length: events.length }, (_, index) => index + 1)
        )
        assert.deepStrictEqual(
          events.filter((event) => event.type === "agent.event").map((event) => event.data),
          [{ type: "done" }]
        )
        assert.strictEqual(events.at(-1)?.type, "run.finished")
        const result = yield* connection.result("hosted-run:1")
        assert.strictEqual(result.status, "SUCCEEDED")
        assert.strictEqual(result.last_seq, events.length)
        const diff = new TextDecoder().decode(yield* connection.file("hosted-run:1", "changes.diff"))
        assert.include(diff, "+written in a sandbox")

        yield* sandboxes.release(sandbox)
      }).pipe(hosted())
  )

  it.live("a tier with no configured networks blocks all egress; standard-2 gets 2 CPU and 4 GiB", () =>
    Effect.gen(function* () {
      const sandboxes = yield* SandboxProvider
      const sandbox = yield* sandboxes.acquire(spec("deep-run:1", { egressTier: "DEEP_SCAN" }))
      const creates = createsFor("deep-run:1")
      assert.strictEqual(creates.length, 1)
      assert.strictEqual(creates[0]?.networkBlockAll, true)
      assert.strictEqual(creates[0]?.networkAllowList, undefined)
      assert.strictEqual(creates[0]?.cpu, 2)
      assert.strictEqual(creates[0]?.memory, 4)
      yield* sandboxes.release(sandbox)
    }).pipe(hosted())
  )

  it.live(
    "acquire again for the same attempt returns the same sandbox without creating another, starting it if it was stopped",
    () =>
      Effect.gen(function* () {
        const sandboxes = yield* SandboxProvider
        const first = yield* sandboxes.acquire(spec("again-run:1"))
        const second = yield* sandboxes.acquire(spec("again-run:1"))
        assert.strictEqual(second.id, first.id)
        assert.strictEqual(second.endpoint.baseUrl.href, first.endpoint.baseUrl.href)
        assert.strictEqual(createsFor("again-run:1").length, 1)

        yield* Effect.promise(() => fake.stop(first.id))
        assert.strictEqual(live(first.id)?.state, "stopped")
        const third = yield* sandboxes.acquire(spec("again-run:1"))
        assert.strictEqual(third.id, first.id)
        assert.strictEqual(live(first.id)?.state, "started")
        assert.strictEqual(createsFor("again-run:1").length, 1)
        assert.strictEqual(
          fake.requests.filter(
            (request) => request.method === "POST" && request.path === `/api/sandbox/${first.id}/start`
          ).length,
          1
        )
        const health = yield* (yield* RuntimeClient).connect(third.endpoint).health
        assert.strictEqual(health.protocol_version, "1.1")
        yield* sandboxes.release(third)
      }).pipe(hosted())
  )

  it.live(
    "an acquire that runs out of readiness time is Unavailable, and the next acquire resumes the same sandbox",
    () =>
      Effect.gen(function* () {
        const impatient = yield* Effect.flip(
          Effect.flatMap(SandboxProvider, (sandboxes) => sandboxes.acquire(spec("slow-run:1")))
        ).pipe(hosted({ readinessTimeout: Duration.millis(1) }))
        assert.strictEqual(impatient.reason, "Unavailable")
        assert.match(impatient.message, /^Sandbox [0-9a-f-]+ was not ready within 1ms: /)
        assert.strictEqual(createsFor("slow-run:1").length, 1)

        const sandboxes = yield* SandboxProvider
        const sandbox = yield* sandboxes.acquire(spec("slow-run:1"))
        assert.include(impatient.message, sandbox.id)
        assert.strictEqual(createsFor("slow-run:1").length, 1)
        yield* sandboxes.release(sandbox)
      }).pipe(hosted())
  )

  it.live("release deletes the sandbox and stops its runtime; a second release succeeds", () =>
    Effect.gen(function* () {
      const sandboxes = yield* SandboxProvider
      const sandbox = yield* sandboxes.acquire(spec("release-run:1"))
      const pid = live(sandbox.id)?.pid
      assert.isDefined(pid)
      yield* sandboxes.release(sandbox)
      assert.isUndefined(live(sandbox.id))
      assert.isFalse(isAlive(pid ?? 0))
      yield* sandboxes.release(sandbox)
      // Both reached the API: the second found nothing (404), which is success.
      assert.strictEqual(
        fake.requests.filter((request) => request.method === "DELETE" && request.path === `/api/sandbox/${sandbox.id}`)
          .length,
        2
      )
    }).pipe(hosted())
  )

  it.live("the fake's gateway refuses requests without the preview token", () =>
    Effect.gen(function* () {
      const sandboxes = yield* SandboxProvider
      const sandbox = yield* sandboxes.acquire(spec("gateway-run:1"))
      const healthz = `${sandbox.endpoint.baseUrl.href}/healthz`
      const token = Redacted.value(sandbox.endpoint.headers?.["x-daytona-preview-token"] ?? Redacted.make(""))
      const status = (headers: Record<string, string>) =>
        Effect.promise(() => fetch(healthz, { headers }).then((response) => response.status))
      assert.strictEqual(yield* status({}), 401)
      assert.strictEqual(yield* status({ "x-daytona-preview-token": `${token}-wrong` }), 401)
      assert.strictEqual(yield* status({ "x-daytona-preview-token": token }), 200)

      const { headers: _, ...bare } = sandbox.endpoint
      const refused = yield* Effect.flip((yield* RuntimeClient).connect(bare).health)
      assert.deepStrictEqual([refused.reason, refused.status], ["Unauthorized", 401])
      yield* sandboxes.release(sandbox)
    }).pipe(hosted())
  )

  it.live("a refused create maps to Refused with the API's message, and the api key appears nowhere in it", () =>
    Effect.gen(function* () {
      const acquire = (attemptId: string) =>
        Effect.flip(Effect.flatMap(SandboxProvider, (sandboxes) => sandboxes.acquire(spec(attemptId))))

      const unknown = yield* acquire("unknown-run:1").pipe(hosted({ runtimeImage: { snapshot: "no-such-snapshot" } }))
      assert.strictEqual(unknown._tag, "SandboxError")
      assert.strictEqual(unknown.reason, "Refused")
      assert.strictEqual(
        unknown.message,
        `The hosted-sandbox API at ${new URL(fake.url).origin} could not create a sandbox (HTTP 400): Snapshot no-such-snapshot not found. Did you add it through the Daytona Dashboard?`
      )

      const wrongKey = yield* acquire("key-run:1").pipe(hosted({ apiKey: Redacted.make(`${API_KEY}-revoked`) }))
      assert.strictEqual(wrongKey.reason, "Refused")
      assert.include(wrongKey.message, "(HTTP 401): Unauthorized")

      fake.failWith({ status: 403, message: "Total CPU limit exceeded. Maximum allowed: 10" })
      const quota = yield* acquire("quota-run:1").pipe(
        hosted(),
        Effect.ensuring(Effect.sync(() => fake.failWith(undefined)))
      )
      assert.strictEqual(quota.reason, "Refused")
      assert.include(quota.message, "(HTTP 403): Total CPU limit exceeded. Maximum allowed: 10")

      // An image the API cannot build ends in build_failed: refused, and the broken sandbox is not kept.
      const unbuildable = yield* acquire("image-run:1").pipe(
        hosted({ runtimeImage: { image: "ghcr.io/nobody/nothing:1" } })
      )
      assert.strictEqual(unbuildable.reason, "Refused")
      assert.include(
        unbuildable.message,
        "build_failed: Failed to build snapshot: pull access denied for ghcr.io/nobody/nothing:1"
      )
      assert.strictEqual(createsFor("image-run:1")[0]?.dockerfile, "FROM ghcr.io/nobody/nothing:1\n")
      assert.isUndefined(fake.sandboxes().find((sandbox) => sandbox.labels["bosun.attempt"] === "image-run:1"))

      for (const error of [unknown, wrongKey, quota, unbuildable]) {
        const everything = `${error.message} ${JSON.stringify(error)} ${String(error)}`
        assert.notInclude(everything, API_KEY)
        assert.notInclude(everything, RUNTIME_TOKEN)
      }
    })
  )

  it.live("an outage (5xx, 429) maps to Unavailable", () =>
    Effect.gen(function* () {
      for (const status of [503, 429]) {
        fake.failWith({ status, message: "Service temporarily unavailable" })
        const error = yield* Effect.flip(
          Effect.flatMap(SandboxProvider, (sandboxes) => sandboxes.acquire(spec(`outage-${status}:1`)))
        ).pipe(hosted(), Effect.ensuring(Effect.sync(() => fake.failWith(undefined))))
        assert.strictEqual(error.reason, "Unavailable")
        assert.include(error.message, `(HTTP ${status}): Service temporarily unavailable`)
      }
    })
  )

  it.live("an unreachable API maps to Unavailable", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(freePort)
      const error = yield* Effect.flip(
        Effect.flatMap(SandboxProvider, (sandboxes) => sandboxes.acquire(spec("unreachable-run:1")))
      ).pipe(hosted({ apiUrl: new URL(`http://127.0.0.1:${port}/api`) }))
      assert.strictEqual(error.reason, "Unavailable")
      assert.strictEqual(
        error.message,
        `The hosted-sandbox API at http://127.0.0.1:${port} could not be reached (ECONNREFUSED)`
      )
      assert.notInclude(JSON.stringify(error), API_KEY)
    })
  )
})
