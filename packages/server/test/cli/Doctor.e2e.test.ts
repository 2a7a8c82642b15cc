/**
 * `bosun doctor` as a process: against a deployment where everything works — a migrated database
 * with sealed secrets under two key versions, Redis, a real S3 server, the fake GitHub with a
 * registered App, the real runtime — and then with one thing broken at a time, each reported as its
 * own FAIL line in plain words with exit code 1, no secret in the output, and nothing written
 * anywhere.
 */

import { generateKeyPairSync, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { createServer as createTcpServer, type Socket, type Server as TcpServer } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { CreateBucketCommand, ListObjectsV2Command } from "@aws-sdk/client-s3"
import { RunQueue } from "@bosun/actors/jobs/RunQueue"
import { RUNTIME_PROTOCOL_VERSION } from "@bosun/domain"
import { freePort } from "@bosun/platform/EmbeddedPostgres"
import { FakeGithub, provided, redisUrl, startFakeModelServer, TestDatabase } from "@bosun/testing"
import { TOKEN as RUNTIME_TOKEN, startRuntime } from "@bosun/testing/RuntimeProcess"
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted, References } from "effect"
import { SqlClient } from "effect/sql"
import { AgentConnectionsRepo } from "../../src/features/agentConnections/AgentConnectionsRepo.ts"
import { GithubAppsRepo } from "../../src/outbound/github/GithubAppsRepo.ts"
import { AppConfig, type S3Settings } from "../../src/platform/config/AppConfig.ts"
import { makeKeyRing, Secrets } from "../../src/platform/crypto/Secrets.ts"
import { runMigrations } from "../../src/platform/db/Migrator.ts"
import { makeS3Client } from "../../src/platform/storage/BlobStoreS3.ts"
import { runCli } from "../support/Process.ts"
import { sealedChecksum, seedOrganizationSecrets } from "../support/SealedFixtures.ts"
import { migrationsDir, testSettings } from "../support/TestServer.ts"

const KEY_V1 = randomBytes(32).toString("base64")
const KEY_V2 = randomBytes(32).toString("base64")
const BOOTSTRAP_TOKEN = `doctor-bootstrap-${randomBytes(12).toString("hex")}`
const S3_SECRET = `doctor-s3-secret-${randomBytes(8).toString("hex")}`
const APP_ID = 7001
const ORG = "doctor-org"
const appKey = generateKeyPairSync("rsa", { modulusLength: 2048 })
const PRIVATE_KEY = appKey.privateKey.export({ type: "pkcs8", format: "pem" }).toString()
const ring = (key: string, version: number, previous: ReadonlyArray<[number, string]> = []) =>
  Secrets.make(
    makeKeyRing({
      key: Redacted.make(key),
      version,
      previous: new Map(previous.map(([v, k]) => [v, Redacted.make(k)] as const))
    })
  )

/** What the deployment under test is: the environment of a `bosun` process and the runtime's address. */
class Deployment extends Context.Service<
  Deployment,
  { readonly env: Record<string, string>; readonly s3: S3Settings }
>()("bosun/server/test/Doctor/Deployment") {}

/**
 * Migrations applied; three secrets of `doctor-org` sealed under key version 1 and its GitHub App
 * under version 2 (active, with version 1 as previous); a bucket; the real runtime; the App's
 * public key on the fake GitHub.
 */
const DeploymentLive = Layer.effect(
  Deployment,
  Effect.gen(function* () {
    const database = yield* TestDatabase
    const sql = yield* SqlClient.SqlClient
    const github = yield* FakeGithub
    yield* runMigrations(migrationsDir).pipe(Effect.orDie, Effect.provideService(References.MinimumLogLevel, "Warn"))
    yield* seedOrganizationSecrets(ORG, 3).pipe(Effect.provideService(Secrets, ring(KEY_V1, 1)))
    yield* Effect.gen(function* () {
      yield* (yield* GithubAppsRepo).upsert(ORG, {
        githubAppId: APP_ID,
        slug: "bosun-doctor",
        clientId: "Iv1.doctor",
        clientSecret: Redacted.make("doctor-client-secret"),
        privateKey: Redacted.make(PRIVATE_KEY),
        webhookSecret: Redacted.make("doctor-webhook-secret")
      })
    }).pipe(
      Effect.provide(GithubAppsRepo.layer),
      Effect.provideService(AppConfig, AppConfig.of(testSettings())),
      Effect.provideService(Secrets, ring(KEY_V2, 2, [[1, KEY_V1]])),
      Effect.provideService(SqlClient.SqlClient, sql)
    )
    github.addApp({
      clientId: "Iv1.doctor",
      clientSecret: "doctor-client-secret",
      appId: APP_ID,
      publicKey: appKey.publicKey.export({ type: "spki", format: "pem" }).toString(),
      slug: "bosun-doctor"
    })

    const bucket = `doctor-${randomBytes(4).toString("hex")}`
    const s3: S3Settings = {
      bucket,
      endpoint: Option.some(new URL(provided("bosun.s3Endpoint"))),
      region: "us-east-1",
      forcePathStyle: true,
      accessKeyId: Option.some(Redacted.make("S3RVER")),
      secretAccessKey: Option.some(Redacted.make("S3RVER"))
    }
    yield* Effect.promise(() => {
      const client = makeS3Client(s3)
      return client.send(new CreateBucketCommand({ Bucket: bucket })).finally(() => client.destroy())
    })

    const runtimeDir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "bosun-doctor-runtime-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const runtime = yield* Effect.acquireRelease(
      Effect.promise(() => startRuntime({ BOSUN_RUNTIME_DATA_DIR: runtimeDir })),
      (runtime) => Effect.promise(() => runtime.stop())
    )
    const redis = redisUrl()
    if (redis === null) return yield* Effect.die(new Error("bosun doctor's tests need Redis (REDIS_URL)"))
    return Deployment.of({
      s3,
      env: {
        DATABASE_URL: database.url,
        BOSUN_DATA_DIR: "/nonexistent/doctor-never-created",
        BOSUN_MASTER_KEY: KEY_V2,
        BOSUN_MASTER_KEY_VERSION: "2",
        BOSUN_PREVIOUS_MASTER_KEYS: JSON.stringify({ "1": KEY_V1 }),
        BOSUN_BOOTSTRAP_TOKEN: BOOTSTRAP_TOKEN,
        REDIS_URL: redis,
        BOSUN_S3_BUCKET: bucket,
        BOSUN_S3_ENDPOINT: provided("bosun.s3Endpoint"),
        BOSUN_S3_FORCE_PATH_STYLE: "true",
        BOSUN_S3_ACCESS_KEY_ID: "S3RVER",
        BOSUN_S3_SECRET_ACCESS_KEY: "S3RVER",
        BOSUN_GITHUB_API_URL: github.apiUrl,
        BOSUN_RUNTIME_URL: runtime.base,
        BOSUN_RUNTIME_TOKEN: RUNTIME_TOKEN
      }
    })
  })
)

const doctor = (overrides: Record<string, string | undefined> = {}, timeoutMs?: number) =>
  Effect.gen(function* () {
    const { env } = yield* Deployment
    const merged: Record<string, string> = {}
    for (const [key, value] of Object.entries({ ...env, ...overrides })) if (value !== undefined) merged[key] = value
    const started = Date.now()
    const result = yield* runCli(["doctor"], merged, timeoutMs)
    const lines = result.stdout.trimEnd().split("\n")
    /** The one line of check `name` (a prefix of the part after the status). */
    const line = (name: string) => {
      const found = lines.filter((l) => l.slice(8).startsWith(`${name}:`))
      assert.strictEqual(found.length, 1, `one line for ${name} in:\n${result.stdout}${result.stderr}`)
      return found[0] ?? ""
    }
    return { ...result, lines, line, seconds: (Date.now() - started) / 1000 }
  })

/** No secret of the deployment, the overrides or the App appears anywhere in what the process wrote. */
const assertNoSecret = (
  output: { readonly stdout: string; readonly stderr: string },
  extra: ReadonlyArray<string> = []
) => {
  const text = output.stdout + output.stderr
  for (const secret of [
    KEY_V1,
    KEY_V2,
    BOOTSTRAP_TOKEN,
    RUNTIME_TOKEN,
    PRIVATE_KEY,
    "doctor-client-secret",
    ...extra
  ]) {
    assert.notInclude(text, secret)
  }
  assert.notInclude(text, "BEGIN PRIVATE KEY")
}

/** `ok`, `FAIL` and `skipped` padded to one column, then the check's name. */
const STATUS = /^(ok {6}|FAIL {4}|skipped )[A-Z]/

layer(DeploymentLive.pipe(Layer.provideMerge(Layer.mergeAll(TestDatabase.layer, FakeGithub.layer))), {
  excludeTestServices: true
})("bosun doctor", (it) => {
  it.effect(
    "a working deployment passes every check, exit 0, and doctor writes nothing",
    () =>
      Effect.gen(function* () {
        const database = yield* TestDatabase
        const sql = yield* SqlClient.SqlClient
        const before = yield* sealedChecksum
        const [migrationsBefore] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM bosun_migrations`

        const run = yield* doctor()
        assert.strictEqual(run.code, 0, run.stdout + run.stderr)
        assert.strictEqual(run.stderr, "")
        for (const l of run.lines) assert.match(l, STATUS, l)
        assert.deepStrictEqual(
          run.lines.map((l) => l.split(" ")[0]),
          ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "skipped", "ok"],
          run.stdout
        )
        assert.strictEqual(
          run.line("Model turn"),
          "skipped Model turn: no organization has agent credentials (nothing to try a model with)"
        )
        assert.include(run.line("Configuration"), "master key version 2, previous version(s) 1")
        assert.include(run.line("Database"), "answers (PostgreSQL")
        assert.match(run.line("Migrations"), /all \d+ applied \(the last: \d{4}_\w+\.sql\)/)
        assert.include(run.line("Redis"), "answers PING (PONG)")
        assert.include(run.line("S3"), "a probe object was written, read back and deleted")
        assert.include(
          run.line(`GitHub App ${APP_ID} of organization ${ORG}`),
          `GitHub accepted the App's JWT: GET /app answered as bosun-doctor (App ${APP_ID})`
        )
        assert.include(run.line("Agent runtime"), `protocol ${RUNTIME_PROTOCOL_VERSION}`)
        assert.include(run.line("Agent runtime"), "accepts the token")
        assert.include(
          run.line("Key ring"),
          "all 6 envelopes open (active version 2, previous 1): github_apps 3 (v2), organization_secrets 3 (v1)"
        )
        assert.include(run.line("Key ring"), "3 under an older key, which `bosun secrets rotate` re-seals")
        const dbPassword = new URL(database.url).password
        assertNoSecret(run, dbPassword === "" ? [] : [dbPassword])

        // Read-only: the sealed columns, the migrations table and the rotation runs are as they were.
        assert.strictEqual(yield* sealedChecksum, before)
        const [migrationsAfter] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM bosun_migrations`
        assert.strictEqual(migrationsAfter?.n, migrationsBefore?.n)
        const [rotations] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM secret_rotations`
        assert.strictEqual(rotations?.n, "0")
        assert.isFalse(fs.existsSync("/nonexistent/doctor-never-created"))
        const { s3 } = yield* Deployment
        const left = yield* Effect.promise(() => {
          const client = makeS3Client(s3)
          return client
            .send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: "bosun-doctor/" }))
            .finally(() => client.destroy())
        })
        assert.strictEqual(left.KeyCount ?? 0, 0)
      }),
    60_000
  )

  it.effect("a malformed setting fails the configuration line by name, without its value, and skips the rest", () =>
    Effect.gen(function* () {
      const malformed = randomBytes(31).toString("base64")
      const run = yield* doctor({ BOSUN_MASTER_KEY: malformed })
      assert.strictEqual(run.code, 1)
      assert.match(
        run.line("Configuration"),
        /^FAIL {4}Configuration: invalid configuration: BOSUN_MASTER_KEY: must be base64 of exactly 32 bytes .*\. Fix: correct the variable it names/
      )
      for (const name of ["Database", "Migrations", "Redis", "S3", "GitHub Apps", "Agent runtime", "Key ring"]) {
        assert.strictEqual(run.line(name), `skipped ${name}: the configuration is invalid (see the Configuration line)`)
      }
      assert.include(run.stderr, "bosun: doctor: 1 of 9 checks failed")
      assertNoSecret(run, [malformed])
    })
  )

  it.effect(
    "a database that does not answer is one FAIL line with the URL's password hidden, within seconds, and its checks are skipped",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.orDie(freePort)
        const password = `doctor-db-password-${randomBytes(6).toString("hex")}`
        const run = yield* doctor({ DATABASE_URL: `postgres://bosun:${password}@127.0.0.1:${port}/bosun` })
        assert.strictEqual(run.code, 1)
        assert.strictEqual(
          run.line("Database"),
          `FAIL    Database: cannot connect to postgres://bosun:***@127.0.0.1:${port}/bosun: connection refused: nothing listens there. Fix: start Postgres there, or correct the host and port in DATABASE_URL`
        )
        for (const name of ["Migrations", "GitHub Apps", "Key ring"]) {
          assert.strictEqual(run.line(name), `skipped ${name}: no database to read (see the Database line)`)
        }
        assert.match(run.line("Redis"), /^ok/)
        assert.match(run.line("Agent runtime"), /^ok/)
        assert.isBelow(run.seconds, 20)
        assertNoSecret(run, [password])
      })
  )

  it.effect(
    "a password given as a query parameter of DATABASE_URL or REDIS_URL is hidden like one in the URL's userinfo",
    () =>
      Effect.gen(function* () {
        const dbPort = yield* Effect.orDie(freePort)
        const redisPort = yield* Effect.orDie(freePort)
        const dbPassword = `doctor-query-db-${randomBytes(6).toString("hex")}`
        const redisPassword = `doctor-query-redis-${randomBytes(6).toString("hex")}`
        const run = yield* doctor({
          DATABASE_URL: `postgres://bosun@127.0.0.1:${dbPort}/bosun?sslmode=disable&password=${dbPassword}`,
          REDIS_URL: `redis://127.0.0.1:${redisPort}?password=${redisPassword}`
        })
        assert.strictEqual(run.code, 1)
        assert.include(
          run.line("Database"),
          `cannot connect to postgres://bosun@127.0.0.1:${dbPort}/bosun?sslmode=disable&password=***:`
        )
        assert.include(run.line("Redis"), `cannot connect to redis://127.0.0.1:${redisPort}?password=***:`)
        assertNoSecret(run, [dbPassword, redisPassword])
      })
  )

  it.effect(
    "on the embedded default doctor starts no Postgres and creates nothing: a never-started and a stopped instance are reported",
    () =>
      Effect.gen(function* () {
        const root = yield* Effect.acquireRelease(
          Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "bosun-doctor-embedded-"))),
          (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
        )
        const embedded = {
          DATABASE_URL: undefined,
          BOSUN_MASTER_KEY: undefined,
          BOSUN_MASTER_KEY_VERSION: undefined,
          BOSUN_PREVIOUS_MASTER_KEYS: undefined
        }
        const fresh = path.join(root, "fresh")
        const never = yield* doctor({ ...embedded, BOSUN_DATA_DIR: fresh })
        assert.strictEqual(never.code, 1)
        assert.strictEqual(
          never.line("Database"),
          `FAIL    Database: DATABASE_URL is unset and ${fresh} has no secrets.json: this embedded instance has never started, so it has no database yet (doctor does not start one). Fix: start Bosun (\`npm start\`) and run doctor while it runs, or set DATABASE_URL`
        )
        assert.include(never.line("Configuration"), "no master key yet")
        assert.isFalse(fs.existsSync(fresh))

        const stopped = path.join(root, "stopped")
        const file = {
          master_key: randomBytes(32).toString("base64"),
          master_key_version: 1,
          bootstrap_token: randomBytes(32).toString("base64url"),
          postgres_password: randomBytes(24).toString("base64url"),
          created_at: new Date().toISOString()
        }
        fs.mkdirSync(stopped)
        fs.writeFileSync(path.join(stopped, "secrets.json"), JSON.stringify(file), { mode: 0o600 })
        const down = yield* doctor({ ...embedded, BOSUN_DATA_DIR: stopped })
        assert.strictEqual(down.code, 1)
        assert.strictEqual(
          down.line("Database"),
          `FAIL    Database: DATABASE_URL is unset and no embedded Postgres runs on ${stopped}/pg (the server starts it; doctor does not). Fix: start Bosun (\`npm start\`) and run doctor while it runs, or set DATABASE_URL`
        )
        assert.include(down.line("Configuration"), "master key version 1")
        assert.deepStrictEqual(fs.readdirSync(stopped), ["secrets.json"])
        assertNoSecret(down, [file.master_key, file.bootstrap_token, file.postgres_password])
      })
  )

  it.effect("services that accept a connection and never answer are reported at their timeout, not waited for", () =>
    Effect.gen(function* () {
      // Accepts every connection and says nothing: a stuck Postgres, Redis, S3 and runtime alike.
      const sockets: Array<Socket> = []
      const silent = yield* Effect.acquireRelease(
        Effect.promise(
          () =>
            new Promise<TcpServer>((resolve) => {
              const server = createTcpServer((socket) => {
                sockets.push(socket)
              })
              server.listen(0, "127.0.0.1", () => resolve(server))
            })
        ),
        (server) =>
          Effect.promise(() => {
            for (const socket of sockets) socket.destroy()
            return new Promise<void>((resolve) => server.close(() => resolve()))
          })
      )
      const port = (silent.address() as AddressInfo).port
      const run = yield* doctor({
        DATABASE_URL: `postgres://bosun@127.0.0.1:${port}/bosun`,
        REDIS_URL: `redis://127.0.0.1:${port}`,
        BOSUN_S3_ENDPOINT: `http://127.0.0.1:${port}`,
        BOSUN_RUNTIME_URL: `http://127.0.0.1:${port}`
      })
      assert.strictEqual(run.code, 1)
      assert.strictEqual(
        run.line("Database"),
        `FAIL    Database: postgres://bosun@127.0.0.1:${port}/bosun did not answer within 5 seconds. Fix: check that the address is Postgres's and that no firewall drops the connection`
      )
      assert.match(run.line("Redis"), /^FAIL {4}Redis: no answer within 5 seconds\. Fix: /)
      assert.match(run.line("S3"), /^FAIL {4}S3: no answer within 5 seconds\. Fix: /)
      assert.match(run.line("Agent runtime"), /^FAIL {4}Agent runtime: no answer within 5 seconds\. Fix: /)
      // The probes run side by side: the whole run is one timeout, not four, plus start-up.
      assert.isBelow(run.seconds, 20)
    })
  )

  it.effect("migration files the database has not applied are listed as pending, and none is applied", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-doctor-sql-"))
          for (const name of fs.readdirSync(migrationsDir))
            fs.copyFileSync(path.join(migrationsDir, name), path.join(dir, name))
          fs.writeFileSync(path.join(dir, "0900_doctor_pending.sql"), "CREATE TABLE doctor_pending (id int);\n")
          fs.writeFileSync(path.join(dir, "0901_doctor_pending_too.sql"), "CREATE TABLE doctor_pending_too (id int);\n")
          return dir
        }),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      const files = fs.readdirSync(dir).length
      const run = yield* doctor({ BOSUN_MIGRATIONS_DIR: dir })
      assert.strictEqual(run.code, 1)
      assert.strictEqual(
        run.line("Migrations"),
        `FAIL    Migrations: 2 of ${files} not applied yet: 0900_doctor_pending.sql, 0901_doctor_pending_too.sql. Fix: start this Bosun version: it applies them at boot (until then /api/* and /readyz answer 503 migrations_pending)`
      )
      assert.match(run.line("Database"), /^ok/)
      assert.match(run.line("Key ring"), /^ok/)
      const [created] = yield* sql<{ present: boolean }>`SELECT to_regclass('doctor_pending') IS NOT NULL AS present`
      assert.isFalse(created?.present)
    })
  )

  it.effect("migrations applied by a newer Bosun and applied files that changed are named, each with its fix", () =>
    Effect.gen(function* () {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-doctor-sql-"))
          const names = fs.readdirSync(migrationsDir).sort()
          // This "older" build lacks the last file the database has, and its first file was edited.
          for (const name of names.slice(0, -1)) fs.copyFileSync(path.join(migrationsDir, name), path.join(dir, name))
          fs.appendFileSync(path.join(dir, names[0] ?? ""), "\n-- edited after release\n")
          return { dir, first: names[0] ?? "", last: names.at(-1) ?? "" }
        }),
        ({ dir }) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      const run = yield* doctor({ BOSUN_MIGRATIONS_DIR: dir.dir })
      assert.strictEqual(run.code, 1)
      const line = run.line("Migrations")
      assert.include(line, `FAIL    Migrations: 1 applied by a newer Bosun and unknown to this one: ${dir.last}`)
      assert.include(line, `1 changed after they were applied (checksum differs): ${dir.first}`)
      assert.include(line, "run the Bosun version that applied them")
      assert.include(line, "never edit an applied migration")
    })
  )

  it.effect("Redis that does not answer is a FAIL line with its password hidden; the other checks still pass", () =>
    Effect.gen(function* () {
      const port = yield* Effect.orDie(freePort)
      const password = `doctor-redis-password-${randomBytes(6).toString("hex")}`
      const run = yield* doctor({ REDIS_URL: `redis://:${password}@127.0.0.1:${port}` })
      assert.strictEqual(run.code, 1)
      assert.strictEqual(
        run.line("Redis"),
        `FAIL    Redis: cannot connect to redis://:***@127.0.0.1:${port}: connection refused: nothing listens there. Fix: start Redis there, or correct REDIS_URL (unset it to keep the cache in-process and the queues in Postgres)`
      )
      assert.deepStrictEqual(run.lines.filter((l) => l.startsWith("FAIL")).length, 1, run.stdout)
      assert.notInclude(run.stderr, "ioredis")
      assertNoSecret(run, [password])
    })
  )

  it.effect("a bucket that does not exist is reported as missing, not as a network or access problem", () =>
    Effect.gen(function* () {
      const run = yield* doctor({ BOSUN_S3_BUCKET: "doctor-no-such-bucket", BOSUN_S3_SECRET_ACCESS_KEY: S3_SECRET })
      assert.strictEqual(run.code, 1)
      const endpoint = new URL(provided("bosun.s3Endpoint")).href
      assert.strictEqual(
        run.line("S3"),
        `FAIL    S3: bucket "doctor-no-such-bucket" at ${endpoint} does not exist. Fix: create the bucket (Bosun never creates it), or correct BOSUN_S3_BUCKET and BOSUN_S3_REGION`
      )
      assertNoSecret(run, [S3_SECRET])
    })
  )

  it.effect("a GitHub App whose stored private key GitHub rejects fails by App id and organization", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const github = yield* FakeGithub
      const registered = generateKeyPairSync("rsa", { modulusLength: 2048 })
      const stored = generateKeyPairSync("rsa", { modulusLength: 2048 })
      const storedPem = stored.privateKey.export({ type: "pkcs8", format: "pem" }).toString()
      github.addApp({
        clientId: "Iv1.doctor-bad",
        clientSecret: "doctor-bad-client-secret",
        appId: 7002,
        publicKey: registered.publicKey.export({ type: "spki", format: "pem" }).toString(),
        slug: "bosun-doctor-bad"
      })
      yield* Effect.acquireRelease(
        Effect.gen(function* () {
          yield* sql`INSERT INTO organizations (id, name) VALUES ('doctor-bad-key', 'doctor-bad-key')`
          yield* (yield* GithubAppsRepo).upsert("doctor-bad-key", {
            githubAppId: 7002,
            slug: "bosun-doctor-bad",
            clientId: "Iv1.doctor-bad",
            clientSecret: Redacted.make("doctor-bad-client-secret"),
            privateKey: Redacted.make(storedPem),
            webhookSecret: Redacted.make("doctor-bad-webhook-secret")
          })
        }).pipe(
          Effect.provide(GithubAppsRepo.layer),
          Effect.provideService(AppConfig, AppConfig.of(testSettings())),
          Effect.provideService(Secrets, ring(KEY_V2, 2, [[1, KEY_V1]]))
        ),
        () =>
          sql`DELETE FROM github_apps WHERE organization_id = 'doctor-bad-key'`.pipe(
            Effect.andThen(sql`DELETE FROM organizations WHERE id = 'doctor-bad-key'`),
            Effect.orDie
          )
      ).pipe(Effect.orDie)

      const run = yield* doctor()
      assert.strictEqual(run.code, 1)
      assert.strictEqual(
        run.line("GitHub App 7002 of organization doctor-bad-key"),
        "FAIL    GitHub App 7002 of organization doctor-bad-key: GitHub refused the App's JWT (401): the stored private key is not App 7002's, or it was revoked. Fix: generate a private key in the App's settings on GitHub and set it with PUT /api/v1/organizations/doctor-bad-key/github-app; also check this machine's clock (a JWT is valid for minutes)"
      )
      assert.match(run.line(`GitHub App ${APP_ID} of organization ${ORG}`), /^ok/)
      assertNoSecret(run, [storedPem, "doctor-bad-client-secret", "doctor-bad-webhook-secret"])
    })
  )

  it.effect(
    "GitHub that cannot be reached fails the App's line with \"GitHub unreachable\" and the connection's own error",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.orDie(freePort)
        const apiUrl = `http://127.0.0.1:${port}/api/v3`
        const run = yield* doctor({ BOSUN_GITHUB_API_URL: apiUrl, BOSUN_GITHUB_RETRIES: "0" })
        assert.strictEqual(run.code, 1)
        const line = run.line(`GitHub App ${APP_ID} of organization ${ORG}`)
        assert.match(line, /^FAIL {4}GitHub App \d+ of organization [^:]+: GitHub unreachable: .*ECONNREFUSED/)
        assert.include(line, `at ${apiUrl}`)
        assert.include(line, "check BOSUN_GITHUB_API_URL and that this machine reaches it")
        assertNoSecret(run)
      })
  )

  it.effect("a runtime nobody listens for is unreachable, said in plain words", () =>
    Effect.gen(function* () {
      const port = yield* Effect.orDie(freePort)
      const run = yield* doctor({ BOSUN_RUNTIME_URL: `http://127.0.0.1:${port}` })
      assert.strictEqual(run.code, 1)
      assert.strictEqual(
        run.line("Agent runtime"),
        `FAIL    Agent runtime: cannot reach http://127.0.0.1:${port}/: connection refused: nothing listens there. Fix: start the runtime there (infra/runtime.Dockerfile, or \`npm run runtime\`), or correct BOSUN_RUNTIME_URL`
      )
    })
  )

  it.effect("a runtime of another protocol major version is refused, naming both versions", () =>
    Effect.gen(function* () {
      const requests: Array<string> = []
      const server = yield* Effect.acquireRelease(
        Effect.promise(
          () =>
            new Promise<ReturnType<typeof createServer>>((resolve) => {
              // Only the runtime's health wire format (RuntimeHealth), from a runtime of protocol 2.
              const server = createServer((req, res) => {
                requests.push(`${req.method} ${req.url}`)
                res.writeHead(200, { "content-type": "application/json" })
                res.end(
                  JSON.stringify({
                    status: "ok",
                    protocol_version: "2.0",
                    toolchain: { opencode: null, codex: null, git: "2.39.5", custom_profiles: [] },
                    active_runs: 0,
                    max_runs: 4
                  })
                )
              })
              server.listen(0, "127.0.0.1", () => resolve(server))
            })
        ),
        (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
      )
      const { port } = server.address() as AddressInfo
      const run = yield* doctor({ BOSUN_RUNTIME_URL: `http://127.0.0.1:${port}` })
      assert.strictEqual(run.code, 1)
      assert.strictEqual(
        run.line("Agent runtime"),
        `FAIL    Agent runtime: http://127.0.0.1:${port}/ speaks runtime protocol 2.0 and this Bosun speaks ${RUNTIME_PROTOCOL_VERSION}: the major versions differ, so every attempt would fail with sandbox_refused. Fix: deploy the runtime built from this Bosun version (infra/runtime.Dockerfile); docs/upgrade.md says in which order`
      )
      assert.deepStrictEqual(requests, ["GET /healthz"])
    })
  )

  it.effect(
    "envelopes sealed under a key no longer in the ring fail the key ring by place and version; nothing is printed of them",
    () =>
      Effect.gen(function* () {
        const run = yield* doctor({ BOSUN_PREVIOUS_MASTER_KEYS: undefined })
        assert.strictEqual(run.code, 1)
        const line = run.line("Key ring")
        assert.strictEqual(
          line,
          "FAIL    Key ring: 3 of 6 envelopes do not open with the ring (active version 2): 3 in organization_secrets.value are sealed under key version 1, which the ring does not hold (rows doctor-org-secret-000000, doctor-org-secret-000001, doctor-org-secret-000002). By table: github_apps 3 (v2), organization_secrets 3 (v1). Fix: add the key of version(s) 1 to BOSUN_PREVIOUS_MASTER_KEYS (keys are never removed until a rotation has re-sealed everything); without it those secrets are lost and must be entered again"
        )
        // The App's credentials are under the active key: its round trip still passes.
        assert.match(run.line(`GitHub App ${APP_ID} of organization ${ORG}`), /^ok/)
        assert.notInclude(run.stdout, "plain-doctor-org")
        assertNoSecret(run)
      })
  )

  it.effect(
    "a model turn per organization: one the model answers, one whose provider refuses the key with its own words",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const refusing = yield* Effect.acquireRelease(
          Effect.promise(() =>
            startFakeModelServer({
              turns: [
                { type: "error", status: 401, message: "Incorrect API key provided: sk-doc...", times: Infinity }
              ],
              title: "Test"
            })
          ),
          (server) => Effect.promise(() => server.close())
        )
        const answering = yield* Effect.acquireRelease(
          Effect.promise(() => startFakeModelServer({ turns: [{ type: "text", text: "OK" }], title: "Test" })),
          (server) => Effect.promise(() => server.close())
        )
        const key = (org: string) => `sk-${org}-0123456789abcdef`
        const connect = (org: string, baseUrl: string) =>
          Effect.gen(function* () {
            yield* sql`INSERT INTO organizations (id, name) VALUES (${org}, ${org}) ON CONFLICT (id) DO NOTHING`
            yield* (yield* AgentConnectionsRepo).write(
              org,
              null,
              () => ({
                fake: {
                  type: "api",
                  key: key(org),
                  npm: "@ai-sdk/openai-compatible",
                  name: "Fake Provider",
                  base_url: baseUrl,
                  models: { "fake-coder": { name: "Fake Coder" } }
                }
              }),
              "doctor-test"
            )
            yield* sql`
              INSERT INTO configuration_groups (organization_id, repository_id, group_name, value)
              VALUES (${org}, NULL, 'agent', ${JSON.stringify({ model: "fake/fake-coder" })}::jsonb)`
          }).pipe(
            Effect.provide(AgentConnectionsRepo.layer.pipe(Layer.provide(RunQueue.layer))),
            Effect.provideService(Secrets, ring(KEY_V2, 2, [[1, KEY_V1]])),
            Effect.orDie
          )
        yield* sql`INSERT INTO users (id, login) VALUES ('doctor-test', 'doctor-test') ON CONFLICT (id) DO NOTHING`
        yield* connect("doctor-model-good", answering.url)
        yield* connect("doctor-model-bad", refusing.url)
        yield* Effect.addFinalizer(() =>
          sql`DELETE FROM organizations WHERE id IN ('doctor-model-good', 'doctor-model-bad')`.pipe(Effect.orDie)
        )

        // Two agent CLI turns on a loaded machine: more time than a probe's.
        const run = yield* doctor({}, 170_000)
        // A turn takes seconds; no discovery (none runs here: no server) is waited for.
        assert.isBelow(run.seconds, 100, run.stdout)
        assert.strictEqual(run.code, 1, run.stdout + run.stderr)
        assert.match(
          run.line("Model turn (doctor-model-good)"),
          /^ok {6}Model turn \(doctor-model-good\): fake\/fake-coder answered in \d+\.\d s$/
        )
        const bad = run.line("Model turn (doctor-model-bad)")
        assert.match(
          bad,
          /^FAIL {4}Model turn \(doctor-model-bad\): fake\/fake-coder did not answer \(after \d+\.\d s\): /
        )
        assert.include(bad, "Incorrect API key provided")
        assert.include(bad, "Fix: check doctor-model-bad's agent credentials")
        // Each organization's own key reached its own provider, and nothing of it was printed.
        assert.include(JSON.stringify(answering.requests.map((r) => r.headers)), key("doctor-model-good"))
        assert.include(JSON.stringify(refusing.requests.map((r) => r.headers)), key("doctor-model-bad"))
        assertNoSecret(run, [key("doctor-model-good"), key("doctor-model-bad")])
        // The other checks are as in a working deployment.
        assert.match(run.line("Agent runtime"), /^ok/)
      }),
    180_000
  )
})
