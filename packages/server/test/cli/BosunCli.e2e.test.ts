/**
 * The `bosun` operator command as a process (docs/operations.md: The operator CLI;
 * docs/interface.md: Secret-rotation procedure 4-7): `keys generate`, `secrets rotate` with and
 * without `--dry-run`, and `secrets status`, on the same database and configuration the server
 * uses.
 */
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { fileURLToPath } from "node:url"
import { LogCapture, TestDatabase } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { AppServicesLive } from "../../src/app/Server.ts"
import { AgentConnectionsRepo } from "../../src/features/agentConnections/AgentConnectionsRepo.ts"
import { OrganizationsRepo } from "../../src/features/identity/OrganizationsRepo.ts"
import { AppConfig } from "../../src/platform/config/AppConfig.ts"
import { Migrator } from "../../src/platform/db/Migrator.ts"
import { cleanEnv } from "../support/Process.ts"
import { seedOrganizationSecrets } from "../support/SealedFixtures.ts"
import { layerTestSecrets, testSettings } from "../support/TestServer.ts"

const cliScript = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))

interface CliResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const bosun = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.callback<CliResult>((resume) => {
    execFile(
      process.execPath,
      [cliScript, ...args],
      { env: cleanEnv(env), timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1
        resume(Effect.succeed({ code, stdout, stderr }))
      }
    )
  })

const oldKey = randomBytes(32).toString("base64")
const nextKey = randomBytes(32).toString("base64")

/** The server's services under key version 1, migrations applied. */
const servicesV1 = AppServicesLive.pipe(
  Layer.provideMerge(Migrator.layer),
  Layer.tap((context) => Context.get(context, Migrator).awaitReady),
  Layer.provideMerge(layerTestSecrets({ masterKey: { key: Redacted.make(oldKey), version: 1, previous: new Map() } })),
  Layer.provide(Layer.succeed(AppConfig, AppConfig.of(testSettings())))
)

const seed = seedOrganizationSecrets("org-cli", 60).pipe(Effect.provide(servicesV1))

layer(Layer.mergeAll(TestDatabase.layer, LogCapture.layer), { excludeTestServices: true })("bosun CLI", (it) => {
  it.effect("keys generate prints a fresh base64 key of 32 bytes", () =>
    Effect.gen(function* () {
      const first = yield* bosun(["keys", "generate"], {})
      const second = yield* bosun(["keys", "generate"], {})
      assert.strictEqual(first.code, 0)
      assert.match(first.stdout, /^[A-Za-z0-9+/]{43}=\n$/)
      assert.strictEqual(Buffer.from(first.stdout.trim(), "base64").length, 32)
      assert.notStrictEqual(first.stdout, second.stdout)
    })
  )

  it.effect(
    "secrets rotate: a dry run without the old key fails with exit 1, the real run with it succeeds, status reads it back",
    () =>
      Effect.gen(function* () {
        const database = yield* TestDatabase
        yield* seed
        const base = {
          DATABASE_URL: database.url,
          BOSUN_DATA_DIR: "/nonexistent/never-created",
          BOSUN_MASTER_KEY: nextKey,
          BOSUN_MASTER_KEY_VERSION: "2"
        }

        const missing = yield* bosun(["secrets", "rotate", "--dry-run"], base)
        assert.strictEqual(missing.code, 1, missing.stderr)
        const failed = JSON.parse(missing.stdout) as Record<string, unknown>
        assert.strictEqual(failed.status, "FAILED")
        assert.strictEqual(failed.dry_run, true)
        assert.strictEqual(failed.total_secrets, 60)
        assert.strictEqual(failed.failed_secrets, 60)
        assert.strictEqual(failed.processed_secrets, 0)
        assert.match(missing.stderr.trimEnd().split("\n").at(-1) ?? "", /^bosun: FAILED: 60 envelope\(s\) did not open/)
        assert.notInclude(missing.stderr, nextKey)

        const withRing = { ...base, BOSUN_PREVIOUS_MASTER_KEYS: JSON.stringify({ "1": oldKey }) }
        const rotated = yield* bosun(["secrets", "rotate", "--batch-size", "7"], withRing)
        assert.strictEqual(rotated.code, 0, rotated.stderr)
        const run = JSON.parse(rotated.stdout) as Record<string, unknown>
        assert.deepStrictEqual(
          {
            status: run.status,
            dry_run: run.dry_run,
            batch_size: run.batch_size,
            target_key_version: run.target_key_version,
            total_secrets: run.total_secrets,
            processed_secrets: run.processed_secrets,
            remaining: run.remaining,
            failed_secrets: run.failed_secrets
          },
          {
            status: "SUCCEEDED",
            dry_run: false,
            batch_size: 7,
            target_key_version: 2,
            total_secrets: 60,
            processed_secrets: 60,
            remaining: 0,
            failed_secrets: 0
          }
        )
        assert.include(rotated.stderr, "100% SUCCEEDED")
        assert.notInclude(rotated.stderr, oldKey)

        // Verification dry run: the old key is no longer needed.
        const verify = yield* bosun(["secrets", "rotate", "--dry-run"], base)
        assert.strictEqual(verify.code, 0, verify.stderr)
        const report = JSON.parse(verify.stdout) as Record<string, unknown>
        assert.strictEqual(report.status, "SUCCEEDED")
        assert.strictEqual(report.remaining, 0)
        assert.strictEqual(report.failed_secrets, 0)

        const status = yield* bosun(["secrets", "status", String(run.id)], base)
        assert.strictEqual(status.code, 0, status.stderr)
        assert.deepStrictEqual(JSON.parse(status.stdout), run)

        const unknown = yield* bosun(["secrets", "status", "no-such-run"], base)
        assert.strictEqual(unknown.code, 1)
        assert.strictEqual(unknown.stdout, "")
        assert.include(unknown.stderr, "bosun: no secret rotation has the id no-such-run")

        // Each run the CLI queued is audit evidence of the operator, as one queued over HTTP is.
        const sql = yield* SqlClient.SqlClient
        const audits = yield* sql<{
          action: string
          actor_kind: string
          organization_id: string | null
          target: string
          details: Record<string, unknown>
        }>`SELECT action, actor_kind, organization_id, target, details FROM audit_events
           WHERE action LIKE 'secret_rotation.%' ORDER BY id`
        assert.deepStrictEqual(audits, [
          {
            action: "secret_rotation.dry_run",
            actor_kind: "operator",
            organization_id: null,
            target: `secret_rotation:${String(failed.id)}`,
            details: { batch_size: 100, target_key_version: 2 }
          },
          {
            action: "secret_rotation.start",
            actor_kind: "operator",
            organization_id: null,
            target: `secret_rotation:${String(run.id)}`,
            details: { batch_size: 7, target_key_version: 2 }
          },
          {
            action: "secret_rotation.dry_run",
            actor_kind: "operator",
            organization_id: null,
            target: `secret_rotation:${String(report.id)}`,
            details: { batch_size: 100, target_key_version: 2 }
          }
        ])
      }),
    120_000
  )

  it.effect(
    "sessions create prints a working cookie as its last line; users grant makes a SUPER_USER",
    () =>
      Effect.gen(function* () {
        const database = yield* TestDatabase
        const sql = yield* SqlClient.SqlClient
        yield* Effect.provide(Effect.void, servicesV1)
        const env = { DATABASE_URL: database.url, BOSUN_MASTER_KEY: nextKey, BOSUN_MASTER_KEY_VERSION: "2" }
        const created = yield* bosun(
          ["sessions", "create", "--org", "org-cli-s", "--login", "Cli-User", "--role", "ADMIN"],
          env
        )
        assert.strictEqual(created.code, 0, created.stderr)
        const last = created.stdout.trimEnd().split("\n").at(-1) ?? ""
        assert.match(last, /^bosun_session=[A-Za-z0-9_-]{43}$/)
        const token = last.slice("bosun_session=".length)
        const sessions = yield* sql<{ login: string; role: string; org: string }>`
        SELECT u.login, m.role, m.organization_id AS org FROM sessions s
        JOIN users u ON u.id = s.user_id JOIN memberships m ON m.user_id = u.id
        WHERE s.token_hash = encode(sha256(convert_to(${token}, 'UTF8')), 'hex')`
        assert.deepStrictEqual(sessions, [{ login: "Cli-User", role: "ADMIN", org: "org-cli-s" }])
        const [audit] = yield* sql<{ action: string; actor_kind: string; organization_id: string }>`
        SELECT action, actor_kind, organization_id FROM audit_events WHERE action = 'session.create'`
        assert.deepStrictEqual(audit, {
          action: "session.create",
          actor_kind: "operator",
          organization_id: "org-cli-s"
        })
        assert.notInclude(JSON.stringify(yield* sql`SELECT details FROM audit_events`), token)

        const granted = yield* bosun(["users", "grant", "--login", "cli-user", "--role", "SUPER_USER"], env)
        assert.strictEqual(granted.code, 0, granted.stderr)
        const [user] = yield* sql<{ instance_role: string | null }>`
        SELECT instance_role FROM users WHERE lower(login) = 'cli-user'`
        assert.strictEqual(user?.instance_role, "SUPER_USER")
        const revoked = yield* bosun(["users", "revoke", "--login", "Cli-User"], env)
        assert.strictEqual(revoked.code, 0, revoked.stderr)
        const [after] = yield* sql<{ instance_role: string | null }>`
        SELECT instance_role FROM users WHERE lower(login) = 'cli-user'`
        assert.strictEqual(after?.instance_role, null)

        const bad = yield* bosun(["sessions", "create", "--org", "org-cli-s", "--login", "not a login"], env)
        assert.strictEqual(bad.code, 1)
        assert.strictEqual(bad.stdout.includes("bosun_session="), false)
      }),
    120_000
  )

  it.effect(
    "agent-connection discover queues a catalog discovery run of the scope's credentials; no credentials or an unknown repository is exit 1",
    () =>
      Effect.gen(function* () {
        const database = yield* TestDatabase
        const sql = yield* SqlClient.SqlClient
        yield* Effect.gen(function* () {
          const organizations = yield* OrganizationsRepo
          const connections = yield* AgentConnectionsRepo
          yield* organizations.ensure("org-cli-ac")
          yield* organizations.ensure("org-cli-empty")
          const [user] = yield* sql<{ id: string }>`INSERT INTO users (login) VALUES ('cli-ac-admin') RETURNING id`
          yield* connections.write(
            "org-cli-ac",
            null,
            () => ({ fake: { type: "api", key: "sk-cli-secret" } }),
            user?.id ?? ""
          )
        }).pipe(Effect.provide(servicesV1))
        const env = { DATABASE_URL: database.url, BOSUN_MASTER_KEY: oldKey }
        const [before] = yield* sql<{ n: string }>`
          SELECT count(*)::text AS n FROM agent_catalog_discoveries WHERE organization_id = 'org-cli-ac'`

        const queued = yield* bosun(["agent-connection", "discover", "--org", "org-cli-ac"], env)
        assert.strictEqual(queued.code, 0, queued.stderr)
        const [discovery] = yield* sql<{ id: string; status: string; workflow_run_id: string; repository_id: null }>`
          SELECT id, status, workflow_run_id, repository_id FROM agent_catalog_discoveries
          WHERE organization_id = 'org-cli-ac' ORDER BY created_at DESC LIMIT 1`
        assert.strictEqual(discovery?.status, "QUEUED")
        assert.isNull(discovery?.repository_id ?? null)
        assert.strictEqual(
          queued.stdout,
          `catalog discovery ${discovery?.id} queued as workflow run ${discovery?.workflow_run_id}; a running server starts it within its Scheduler tick\n`
        )
        const [run] = yield* sql<{ workflow_type: string; status: string; lane: string; session_key: string }>`
          SELECT r.workflow_type, r.status, j.lane, j.session_key FROM workflow_runs r JOIN jobs j ON j.run_id = r.id
          WHERE r.organization_id = 'org-cli-ac' AND r.id = ${discovery?.workflow_run_id ?? ""}`
        assert.deepStrictEqual(run, {
          workflow_type: "catalog_discovery",
          status: "QUEUED",
          lane: "AGENT",
          session_key: "catalog:org-cli-ac:-"
        })
        const [after] = yield* sql<{ n: string }>`
          SELECT count(*)::text AS n FROM agent_catalog_discoveries WHERE organization_id = 'org-cli-ac'`
        assert.strictEqual(Number(after?.n), Number(before?.n) + 1)
        const [audit] = yield* sql<{ actor_kind: string; target: string }>`
          SELECT actor_kind, target FROM audit_events WHERE action = 'agent_connection.discover'`
        assert.deepStrictEqual(audit, { actor_kind: "operator", target: "agent_connection:organization" })

        const none = yield* bosun(["agent-connection", "discover", "--org", "org-cli-empty"], env)
        assert.strictEqual(none.code, 1)
        assert.include(none.stderr, "org-cli-empty has no agent-connection credentials")
        const unknown = yield* bosun(
          ["agent-connection", "discover", "--org", "org-cli-ac", "--repository", "no-such-repo"],
          env
        )
        assert.strictEqual(unknown.code, 1)
        assert.include(unknown.stderr, "has no repository no-such-repo")
        const [unchanged] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM agent_catalog_discoveries`
        assert.strictEqual(Number(unchanged?.n), Number(after?.n))
        assert.notInclude(queued.stdout + queued.stderr + none.stderr, "sk-cli-secret")
      }),
    120_000
  )

  it.effect("secrets rotate rejects a batch size outside 1..200 with exit 1 and queues nothing", () =>
    Effect.gen(function* () {
      const database = yield* TestDatabase
      const sql = yield* SqlClient.SqlClient
      yield* Effect.provide(Effect.void, servicesV1)
      const [before] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM secret_rotations`
      const result = yield* bosun(["secrets", "rotate", "--batch-size", "201"], {
        DATABASE_URL: database.url,
        BOSUN_MASTER_KEY: nextKey,
        BOSUN_MASTER_KEY_VERSION: "2"
      })
      assert.strictEqual(result.code, 1)
      assert.include(result.stderr, "--batch-size")
      const [after] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM secret_rotations`
      assert.strictEqual(after?.n, before?.n)
    })
  )
})
