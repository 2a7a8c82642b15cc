/**
 * Master-key rotation against a real Postgres (docs/interface.md: Secret-rotation procedure 4-7,
 * Errors 7): a run killed mid-way is finished by a second one with every envelope sealed exactly
 * once under the new key; a fresh run skips what an earlier run already rotated; a missing previous
 * key fails the run without writing; a dry run leaves every sealed byte as it was. Also: every
 * bytea column of the schema is a registered sealed column, and no fixture's plaintext is stored.
 */
import { randomBytes } from "node:crypto"
import { freePort } from "@bosun/platform/EmbeddedPostgres"
import { eventually, LogCapture, TestDatabase } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { appServices } from "../../../src/app/Server.ts"
import { AgentConnectionsRepo } from "../../../src/features/agentConnections/AgentConnectionsRepo.ts"
import { UsersRepo } from "../../../src/features/identity/UsersRepo.ts"
import { OrganizationSecretsRepo } from "../../../src/features/secrets/OrganizationSecretsRepo.ts"
import { SecretRotation } from "../../../src/features/secrets/SecretRotation.ts"
import { GithubAppsRepo } from "../../../src/outbound/github/GithubAppsRepo.ts"
import { AppConfig, type MasterKeySettings } from "../../../src/platform/config/AppConfig.ts"
import { SealedColumns } from "../../../src/platform/crypto/SealedColumns.ts"
import { Secrets } from "../../../src/platform/crypto/Secrets.ts"
import { Migrator } from "../../../src/platform/db/Migrator.ts"
import { spawnServer } from "../../support/Process.ts"
import {
  fixturePlaintext,
  readOrganizationSecrets,
  sealedChecksum,
  secretPlace,
  seedOrganizationSecrets,
  verifyOrganizationSecrets
} from "../../support/SealedFixtures.ts"
import { layerTestSecrets, testSettings } from "../../support/TestServer.ts"

const newKey = () => randomBytes(32).toString("base64")

const ring = (version: number, key: string, previous: Record<number, string> = {}): MasterKeySettings => ({
  key: Redacted.make(key),
  version,
  previous: new Map(Object.entries(previous).map(([v, k]) => [Number(v), Redacted.make(k)] as const))
})

/** The server's services (sealing, repositories, rotation worker) under `masterKey`, migrations applied. */
const servicesWith = (masterKey: MasterKeySettings, options = { rotationWorker: true }) =>
  appServices(options).pipe(
    Layer.provideMerge(Migrator.layer),
    Layer.tap((context) => Context.get(context, Migrator).awaitReady),
    Layer.provideMerge(layerTestSecrets({ masterKey })),
    Layer.provide(Layer.succeed(AppConfig, AppConfig.of(testSettings())))
  )

const runToEnd = (request: { readonly dryRun: boolean; readonly batchSize: number }) =>
  Effect.gen(function* () {
    const rotation = yield* SecretRotation
    const { run } = yield* rotation.start(request)
    return yield* eventually(
      Effect.map(rotation.get(run.id), Option.getOrThrow),
      (current) => current.status === "SUCCEEDED" || current.status === "FAILED",
      Duration.seconds(60)
    )
  })

/** How many envelopes of the organization are sealed under each key version. */
const versionCounts = (organizationId: string) =>
  Effect.map(readOrganizationSecrets(organizationId), (rows) => {
    const counts: Record<number, number> = {}
    for (const row of rows) {
      const version = Buffer.from(row.envelope).readUInt32BE(1)
      counts[version] = (counts[version] ?? 0) + 1
    }
    return counts
  })

/** Each test starts from no sealed rows and no runs (the suite shares one database). */
const reset = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM organization_secrets`
  yield* sql`DELETE FROM github_apps`
  yield* sql`DELETE FROM agent_connections`
  yield* sql`DELETE FROM secret_rotations`
}).pipe(Effect.provide(servicesWith(ring(1, newKey()))), Effect.orDie)

const http =
  (base: string, token: string) =>
  (path: string, init: { method?: string; body?: unknown } = {}) =>
    Effect.promise(async () => {
      const response = await fetch(`${base}${path}`, {
        method: init.method ?? "GET",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
      })
      return { status: response.status, json: (await response.json()) as { data: Record<string, unknown> } }
    })

layer(Layer.mergeAll(TestDatabase.layer, LogCapture.layer), { excludeTestServices: true })("secret rotation", (it) => {
  it.effect(
    "a rotation of 10,000 envelopes killed mid-run is finished by a second run, each envelope re-sealed once",
    () =>
      Effect.gen(function* () {
        yield* reset
        const database = yield* TestDatabase
        const oldKey = newKey()
        const nextKey = newKey()
        yield* seedOrganizationSecrets("org-kill", 10_000).pipe(Effect.provide(servicesWith(ring(1, oldKey))))

        const token = randomBytes(16).toString("hex")
        const serverEnv = (port: number) => ({
          DATABASE_URL: database.url,
          BOSUN_PORT: String(port),
          BOSUN_DATA_DIR: "/nonexistent/never-created",
          BOSUN_MASTER_KEY: nextKey,
          BOSUN_MASTER_KEY_VERSION: "2",
          BOSUN_PREVIOUS_MASTER_KEYS: JSON.stringify({ "1": oldKey }),
          BOSUN_BOOTSTRAP_TOKEN: token,
          BOSUN_SECRET_ROTATION_LEASE: "1 second",
          BOSUN_SECRET_ROTATION_POLL_INTERVAL: "200 millis"
        })
        const awaitReady = (base: string) =>
          eventually(
            Effect.promise(() =>
              fetch(`${base}/readyz`).then(
                (r) => r.status,
                () => 0
              )
            ),
            (status) => status === 200,
            // A server process starts its runtime and cluster runner too: minutes apart on a busy CI box.
            Duration.seconds(90)
          )

        // First server: start a real rotation in small batches and kill it once it is under way.
        const firstPort = yield* freePort
        const first = yield* spawnServer(serverEnv(firstPort))
        const firstBase = `http://127.0.0.1:${firstPort}`
        yield* awaitReady(firstBase)
        const created = yield* http(firstBase, token)("/api/v1/instance/secret-rotations", {
          method: "POST",
          body: { dry_run: false, batch_size: 10 }
        })
        assert.strictEqual(created.status, 202)
        const runId = String(created.json.data.id)
        const underWay = yield* eventually(
          http(firstBase, token)(`/api/v1/instance/secret-rotations/${runId}`),
          (response) => Number(response.json.data.processed_secrets) >= 500,
          Duration.seconds(60)
        )
        first.child.kill("SIGKILL")
        yield* first.exited

        const sql = yield* SqlClient.SqlClient
        const [killed] = yield* sql<{ status: string; processed_secrets: number }>`
          SELECT status, processed_secrets FROM secret_rotations WHERE id = ${runId}`
        assert.strictEqual(killed?.status, "RUNNING")
        assert.isAtLeast(killed?.processed_secrets ?? 0, Number(underWay.json.data.processed_secrets))
        assert.isBelow(killed?.processed_secrets ?? 0, 10_000, "the kill came too late to interrupt the run")
        // Progress commits with its batch: what the run reports is exactly what was re-sealed.
        const midway = yield* versionCounts("org-kill")
        assert.strictEqual(midway[2], killed?.processed_secrets)
        assert.strictEqual((midway[1] ?? 0) + (midway[2] ?? 0), 10_000)

        // Second server: asking again returns the interrupted run, which it resumes and finishes.
        const secondPort = yield* freePort
        yield* spawnServer(serverEnv(secondPort))
        const secondBase = `http://127.0.0.1:${secondPort}`
        yield* awaitReady(secondBase)
        const again = yield* http(secondBase, token)("/api/v1/instance/secret-rotations", {
          method: "POST",
          body: { dry_run: false }
        })
        assert.strictEqual(again.status, 202)
        assert.strictEqual(again.json.data.id, runId)
        const finished = yield* eventually(
          http(secondBase, token)(`/api/v1/instance/secret-rotations/${runId}`),
          (response) => response.json.data.status === "SUCCEEDED" || response.json.data.status === "FAILED",
          Duration.seconds(120)
        )
        assert.deepStrictEqual(
          {
            status: finished.json.data.status,
            total_secrets: finished.json.data.total_secrets,
            processed_secrets: finished.json.data.processed_secrets,
            remaining: finished.json.data.remaining,
            failed_secrets: finished.json.data.failed_secrets
          },
          { status: "SUCCEEDED", total_secrets: 10_000, processed_secrets: 10_000, remaining: 0, failed_secrets: 0 }
        )

        // Every envelope opens under the new key alone, to its original plaintext.
        const verified = yield* verifyOrganizationSecrets("org-kill", 2).pipe(
          Effect.provide(servicesWith(ring(2, nextKey)))
        )
        assert.deepStrictEqual(verified, { rows: 10_000, matching: 10_000 })

        // The verification dry run (procedure 7).
        const verification = yield* http(secondBase, token)("/api/v1/instance/secret-rotations", {
          method: "POST",
          body: { dry_run: true }
        })
        const report = yield* eventually(
          http(secondBase, token)(`/api/v1/instance/secret-rotations/${String(verification.json.data.id)}`),
          (response) => response.json.data.status === "SUCCEEDED" || response.json.data.status === "FAILED",
          Duration.seconds(60)
        )
        assert.strictEqual(report.json.data.status, "SUCCEEDED")
        assert.strictEqual(report.json.data.total_secrets, 10_000)
        assert.strictEqual(report.json.data.remaining, 0)
        assert.strictEqual(report.json.data.failed_secrets, 0)
        assert.strictEqual(report.json.data.processed_secrets, 0)
      }),
    240_000
  )

  it.effect("a fresh run re-seals only what an earlier run left under the old key", () =>
    Effect.gen(function* () {
      yield* reset
      const oldKey = newKey()
      const nextKey = newKey()
      yield* seedOrganizationSecrets("org-fresh", 500).pipe(Effect.provide(servicesWith(ring(1, oldKey))))
      // An earlier, interrupted run had re-sealed the first 200 under version 2.
      const sql = yield* SqlClient.SqlClient
      const rotated = yield* Effect.gen(function* () {
        const secrets = yield* Secrets
        const rows = (yield* readOrganizationSecrets("org-fresh")).slice(0, 200)
        for (const row of rows) {
          const next = secrets.resealUnsafe(row.envelope, secretPlace(row.id))
          if (!(next instanceof Uint8Array)) return yield* Effect.die(next)
          yield* sql`UPDATE organization_secrets SET value = ${next} WHERE id = ${row.id}`
        }
        return rows.length
      }).pipe(Effect.provide(servicesWith(ring(2, nextKey, { 1: oldKey }))))
      assert.strictEqual(rotated, 200)
      const before = yield* versionCounts("org-fresh")
      assert.deepStrictEqual(before, { 1: 300, 2: 200 })

      const run = yield* runToEnd({ dryRun: false, batchSize: 37 }).pipe(
        Effect.provide(servicesWith(ring(2, nextKey, { 1: oldKey })))
      )
      assert.strictEqual(run.status, "SUCCEEDED")
      assert.strictEqual(run.target_key_version, 2)
      assert.strictEqual(run.processed_secrets, 300)
      assert.strictEqual(run.remaining, 0)
      assert.strictEqual(run.failed_secrets, 0)
      assert.strictEqual(run.total_secrets, 500)
      assert.deepStrictEqual(yield* versionCounts("org-fresh"), { 2: 500 })
      const verified = yield* verifyOrganizationSecrets("org-fresh", 2).pipe(
        Effect.provide(servicesWith(ring(2, nextKey)))
      )
      assert.deepStrictEqual(verified, { rows: 500, matching: 500 })
    })
  )

  describe("with an older key missing from the ring", () => {
    it.effect("a dry run reports every unreadable envelope and FAILED; a real run fails and writes nothing", () =>
      Effect.gen(function* () {
        yield* reset
        const oldKey = newKey()
        const nextKey = newKey()
        // Version 3 is active and version 1, which sealed everything, is not in the ring.
        const services = servicesWith(ring(3, nextKey, { 2: newKey() }))
        yield* seedOrganizationSecrets("org-missing", 120).pipe(Effect.provide(servicesWith(ring(1, oldKey))))
        const checksum = yield* sealedChecksum

        const dry = yield* runToEnd({ dryRun: true, batchSize: 50 }).pipe(Effect.provide(services))
        assert.strictEqual(dry.status, "FAILED")
        assert.strictEqual(dry.dry_run, true)
        assert.strictEqual(dry.total_secrets, 120)
        assert.strictEqual(dry.failed_secrets, 120)
        assert.strictEqual(dry.remaining, 120)
        assert.strictEqual(dry.processed_secrets, 0)

        const real = yield* runToEnd({ dryRun: false, batchSize: 50 }).pipe(Effect.provide(services))
        assert.strictEqual(real.status, "FAILED")
        assert.strictEqual(real.failed_secrets, 120)
        assert.strictEqual(real.processed_secrets, 0)
        assert.strictEqual(real.remaining, 120)
        assert.strictEqual(yield* sealedChecksum, checksum)
      })
    )
  })

  it.effect("a real run refuses before writing anything when some envelopes are under a version the ring lacks", () =>
    Effect.gen(function* () {
      yield* reset
      const k1 = newKey()
      const k2 = newKey()
      const k3 = newKey()
      yield* seedOrganizationSecrets("org-v1", 30).pipe(Effect.provide(servicesWith(ring(1, k1))))
      yield* seedOrganizationSecrets("org-v2", 50).pipe(Effect.provide(servicesWith(ring(2, k2, { 1: k1 }))))
      const checksum = yield* sealedChecksum
      // Version 2 is in the ring, version 1 is not: nothing may be re-sealed, not even org-v2.
      const run = yield* runToEnd({ dryRun: false, batchSize: 20 }).pipe(
        Effect.provide(servicesWith(ring(3, k3, { 2: k2 })))
      )
      assert.strictEqual(run.status, "FAILED")
      assert.strictEqual(run.failed_secrets, 30)
      assert.strictEqual(run.processed_secrets, 0)
      assert.strictEqual(run.total_secrets, 80)
      assert.strictEqual(run.remaining, 80)
      assert.include(run.error ?? "", "key version(s) 1")
      assert.strictEqual(yield* sealedChecksum, checksum)
    })
  )

  it.effect("a real run stops at a batch holding an envelope that does not open, writing nothing of that batch", () =>
    Effect.gen(function* () {
      yield* reset
      const sql = yield* SqlClient.SqlClient
      const k1 = newKey()
      const k2 = newKey()
      yield* seedOrganizationSecrets("org-corrupt", 100).pipe(Effect.provide(servicesWith(ring(1, k1))))
      // One ciphertext byte of the 46th envelope flipped: its version is in the ring, it does not open.
      yield* sql`UPDATE organization_secrets SET value = set_byte(value, 20, get_byte(value, 20) # 1)
                 WHERE id = 'org-corrupt-secret-000045'`
      const run = yield* runToEnd({ dryRun: false, batchSize: 10 }).pipe(
        Effect.provide(servicesWith(ring(2, k2, { 1: k1 })))
      )
      assert.strictEqual(run.status, "FAILED")
      assert.strictEqual(run.failed_secrets, 1)
      assert.strictEqual(run.processed_secrets, 40)
      assert.strictEqual(run.remaining, 60)
      assert.include(run.error ?? "", "did not open")
      assert.deepStrictEqual(yield* versionCounts("org-corrupt"), { 1: 60, 2: 40 })
    })
  )

  it.effect("a worker whose active key differs from the run's (same version) fails the run and re-seals nothing", () =>
    Effect.gen(function* () {
      yield* reset
      const k1 = newKey()
      yield* seedOrganizationSecrets("org-split", 20).pipe(Effect.provide(servicesWith(ring(1, k1))))
      const checksum = yield* sealedChecksum
      // Queued by a process holding one version-2 key, worked on by one holding another.
      const queued = yield* Effect.gen(function* () {
        const rotation = yield* SecretRotation
        return (yield* rotation.start({ dryRun: false, batchSize: 5 })).run
      }).pipe(Effect.provide(servicesWith(ring(2, newKey(), { 1: k1 }), { rotationWorker: false })))
      assert.strictEqual(queued.status, "QUEUED")
      const run = yield* Effect.gen(function* () {
        const rotation = yield* SecretRotation
        return yield* eventually(
          Effect.map(rotation.get(queued.id), Option.getOrThrow),
          (current) => current.status === "FAILED" || current.status === "SUCCEEDED",
          Duration.seconds(30)
        )
      }).pipe(Effect.provide(servicesWith(ring(2, newKey(), { 1: k1 }))))
      assert.strictEqual(run.status, "FAILED")
      assert.strictEqual(run.processed_secrets, 0)
      assert.include(run.error ?? "", "not the key this run was created with")
      assert.strictEqual(yield* sealedChecksum, checksum)
    })
  )

  it.effect("a dry run opens every envelope and leaves the sealed columns byte-identical", () =>
    Effect.gen(function* () {
      yield* reset
      const oldKey = newKey()
      const nextKey = newKey()
      yield* seedOrganizationSecrets("org-dry", 250).pipe(Effect.provide(servicesWith(ring(1, oldKey))))
      const before = yield* sealedChecksum
      const run = yield* runToEnd({ dryRun: true, batchSize: 64 }).pipe(
        Effect.provide(servicesWith(ring(2, nextKey, { 1: oldKey })))
      )
      assert.deepStrictEqual(
        {
          status: run.status,
          dry_run: run.dry_run,
          total_secrets: run.total_secrets,
          processed_secrets: run.processed_secrets,
          remaining: run.remaining,
          failed_secrets: run.failed_secrets
        },
        {
          status: "SUCCEEDED",
          dry_run: true,
          total_secrets: 250,
          processed_secrets: 0,
          remaining: 250,
          failed_secrets: 0
        }
      )
      assert.isNotNull(run.finished_at)
      assert.strictEqual(yield* sealedChecksum, before)
      assert.deepStrictEqual(yield* versionCounts("org-dry"), { 1: 250 })
    })
  )

  it.effect("every bytea column of the schema is a registered sealed column", () =>
    Effect.gen(function* () {
      yield* reset
      const sql = yield* SqlClient.SqlClient
      const columns = yield* sql<{ table_name: string; column_name: string }>`
        SELECT table_name, column_name FROM information_schema.columns
        WHERE table_schema = 'public' AND data_type = 'bytea' ORDER BY table_name, column_name`
      const registered = SealedColumns.map((c) => `${c.table}.${c.column}`).sort()
      assert.deepStrictEqual(
        columns.map((c) => `${c.table_name}.${c.column_name}`),
        registered
      )
    })
  )

  it.effect("no secret plaintext is stored in any column of any table", () =>
    Effect.gen(function* () {
      yield* reset
      const sql = yield* SqlClient.SqlClient
      const key = newKey()
      const plaintexts = [
        "gh-client-secret-7d1e",
        "-----BEGIN PRIVATE KEY-----\nfixture-private-key-body-99\n-----END PRIVATE KEY-----",
        "gh-webhook-secret-4c2b",
        "user-secret-value-81f3"
      ]
      yield* Effect.gen(function* () {
        yield* sql`INSERT INTO organizations (id, name) VALUES ('org-scan', 'org-scan') ON CONFLICT DO NOTHING`
        const apps = yield* GithubAppsRepo
        yield* apps.upsert("org-scan", {
          githubAppId: 7,
          slug: "scan-app",
          clientId: "Iv1.scan",
          clientSecret: Redacted.make(plaintexts[0] ?? ""),
          privateKey: Redacted.make(plaintexts[1] ?? ""),
          webhookSecret: Redacted.make(plaintexts[2] ?? "")
        })
        const userSecrets = yield* OrganizationSecretsRepo
        yield* userSecrets.put("org-scan", "API_TOKEN", Redacted.make(plaintexts[3] ?? ""))
        yield* seedOrganizationSecrets("org-scan-bulk", 50)
        const users = yield* UsersRepo
        const operator = yield* users.ensureByLogin("scan-operator")
        const connections = yield* AgentConnectionsRepo
        yield* connections.write(
          "org-scan",
          null,
          () => ({ openai: { type: "api", key: "agent-key-plain-66d0" } }),
          operator.id
        )
        // The repositories read back what they sealed.
        const app = Option.getOrThrow(yield* apps.find("org-scan"))
        assert.strictEqual(Redacted.value(app.clientSecret), plaintexts[0])
        assert.strictEqual(Redacted.value(app.privateKey), plaintexts[1])
        const stored = Option.getOrThrow(yield* userSecrets.get("org-scan", "API_TOKEN"))
        assert.strictEqual(Redacted.value(stored), plaintexts[3])
      }).pipe(Effect.provide(servicesWith(ring(1, key))))

      const columns = yield* sql<{ table_name: string; column_name: string; data_type: string }>`
        SELECT table_name, column_name, data_type FROM information_schema.columns
        WHERE table_schema = 'public' ORDER BY table_name, column_name`
      const needles = [
        ...plaintexts,
        fixturePlaintext("org-scan-bulk", 3),
        "fixture-private-key-body-99",
        "agent-key-plain-66d0"
      ]
      const hits: Array<string> = []
      for (const column of columns) {
        for (const needle of needles) {
          const [row] =
            column.data_type === "bytea"
              ? yield* sql<{ n: string }>`
                  SELECT count(*)::text AS n FROM ${sql(column.table_name)}
                  WHERE position(convert_to(${needle}, 'UTF8') in ${sql(column.column_name)}) > 0`
              : yield* sql<{ n: string }>`
                  SELECT count(*)::text AS n FROM ${sql(column.table_name)}
                  WHERE strpos(${sql(column.column_name)}::text, ${needle}) > 0`
          if (Number(row?.n ?? 0) > 0) hits.push(`${column.table_name}.${column.column_name}`)
        }
      }
      assert.deepStrictEqual(hits, [])
      assert.isAtLeast(columns.length, 20)
    })
  )
})
