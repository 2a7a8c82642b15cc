/**
 * `bosun slack connect` and `bosun linear connect` as processes: on the server's database and
 * configuration, with secrets read from files, checked with Slack (a local fake of its Web API),
 * sealed, audited, and never printed.
 */
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { FakeSlack, LogCapture, TestDatabase } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { AppServicesLive } from "../../src/app/Server.ts"
import { OrganizationsRepo } from "../../src/features/identity/OrganizationsRepo.ts"
import { AppConfig } from "../../src/platform/config/AppConfig.ts"
import { Migrator } from "../../src/platform/db/Migrator.ts"
import { cleanEnv } from "../support/Process.ts"
import { layerTestSecrets, testSettings } from "../support/TestServer.ts"

const cliScript = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const masterKey = randomBytes(32).toString("base64")
const TOKEN = "xoxb-cli-connect-8e9f"
const SIGNING = "cli-signing-secret-0a1b"
const WEBHOOK = "cli-linear-webhook-secret-2c3d"
const LINEAR_TOKEN = "lin_api_cli_connect_4e5f"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-connect-cli-"))
const file = (name: string, content: string) => {
  const at = path.join(dir, name)
  fs.writeFileSync(at, content, { mode: 0o600 })
  return at
}

const bosun = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const database = yield* TestDatabase
    const slack = yield* FakeSlack
    return yield* Effect.callback<{ code: number; stdout: string; stderr: string }>((resume) => {
      execFile(
        process.execPath,
        [cliScript, ...args],
        {
          env: cleanEnv({
            DATABASE_URL: database.url,
            BOSUN_DATA_DIR: "/nonexistent/never-created",
            BOSUN_MASTER_KEY: masterKey,
            BOSUN_SLACK_API_URL: slack.apiUrl
          }),
          timeout: 60_000
        },
        (error, stdout, stderr) =>
          resume(
            Effect.succeed({
              code: error === null ? 0 : typeof error.code === "number" ? error.code : -1,
              stdout,
              stderr
            })
          )
      )
    })
  })

const services = AppServicesLive.pipe(
  Layer.provideMerge(Migrator.layer),
  Layer.tap((context) => Context.get(context, Migrator).awaitReady),
  Layer.provideMerge(
    layerTestSecrets({ masterKey: { key: Redacted.make(masterKey), version: 1, previous: new Map() } })
  ),
  Layer.provide(Layer.succeed(AppConfig, AppConfig.of(testSettings())))
)

layer(Layer.mergeAll(TestDatabase.layer, LogCapture.layer, FakeSlack.layer), { excludeTestServices: true })(
  "bosun slack/linear connect",
  (it) => {
    it.effect(
      "slack connect checks the token with Slack and stores the team; a refused token or an unknown organization is exit 1",
      () =>
        Effect.gen(function* () {
          const slack = yield* FakeSlack
          slack.addWorkspace({ token: TOKEN, teamId: "T0CLI", teamName: "CLI", botUserId: "U0CLIBOT" })
          yield* Effect.flatMap(OrganizationsRepo, (organizations) => organizations.ensure("cli-org")).pipe(
            Effect.provide(services)
          )
          const tokenFile = file("bot-token", `${TOKEN}\n`)
          const secretFile = file("signing-secret", SIGNING)

          const connected = yield* bosun([
            "slack",
            "connect",
            "--org",
            "cli-org",
            "--bot-token-file",
            tokenFile,
            "--signing-secret-file",
            secretFile
          ])
          assert.strictEqual(connected.code, 0, connected.stderr)
          assert.strictEqual(
            connected.stdout.trim(),
            "cli-org is connected to Slack team T0CLI (CLI) as bot user U0CLIBOT"
          )
          assert.notInclude(connected.stdout + connected.stderr, TOKEN)
          assert.notInclude(connected.stdout + connected.stderr, SIGNING)

          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ team_id: string; bot_user_id: string; sealed: boolean }>`
          SELECT team_id, bot_user_id,
                 position(${TOKEN}::bytea IN bot_token) = 0 AND position(${SIGNING}::bytea IN signing_secret) = 0 AS sealed
          FROM slack_connections WHERE organization_id = 'cli-org'`
          assert.deepStrictEqual(rows, [{ team_id: "T0CLI", bot_user_id: "U0CLIBOT", sealed: true }])
          const audit = yield* sql<{ action: string; target: string }>`
          SELECT action, target FROM audit_events WHERE organization_id = 'cli-org' ORDER BY id`
          assert.deepStrictEqual(audit, [{ action: "slack_connection.connect", target: "slack_team:T0CLI" }])

          const refused = yield* bosun([
            "slack",
            "connect",
            "--org",
            "cli-org",
            "--bot-token-file",
            file("revoked", "xoxb-revoked"),
            "--signing-secret-file",
            secretFile
          ])
          assert.strictEqual(refused.code, 1)
          assert.include(refused.stderr, "Slack refused the bot token (Slack auth.test: invalid_auth)")
          assert.notInclude(refused.stderr, "xoxb-revoked")

          const unknown = yield* bosun([
            "slack",
            "connect",
            "--org",
            "no-such-org",
            "--bot-token-file",
            tokenFile,
            "--signing-secret-file",
            secretFile
          ])
          assert.strictEqual(unknown.code, 1)
          assert.include(unknown.stderr, "no organization has the id no-such-org")
        })
    )

    it.effect("linear connect stores the workspace, the sealed secret and token, and Bosun's Linear user", () =>
      Effect.gen(function* () {
        yield* Effect.flatMap(OrganizationsRepo, (organizations) => organizations.ensure("cli-linear")).pipe(
          Effect.provide(services)
        )
        const connected = yield* bosun([
          "linear",
          "connect",
          "--org",
          "cli-linear",
          "--workspace",
          "lin-ws-cli",
          "--webhook-secret-file",
          file("linear-webhook", `${WEBHOOK}\n`),
          "--access-token-file",
          file("linear-token", LINEAR_TOKEN),
          "--app-user-id",
          "lin-user-bosun",
          "--app-user-name",
          "bosun"
        ])
        assert.strictEqual(connected.code, 0, connected.stderr)
        assert.strictEqual(
          connected.stdout.trim(),
          "cli-linear is connected to Linear workspace lin-ws-cli with an access token"
        )
        assert.notInclude(connected.stdout + connected.stderr, WEBHOOK)
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ linear_organization_id: string; app_user_name: string | null; sealed: boolean }>`
          SELECT linear_organization_id, app_user_name,
                 position(${WEBHOOK}::bytea IN webhook_secret) = 0 AND position(${LINEAR_TOKEN}::bytea IN access_token) = 0
                   AS sealed
          FROM linear_connections WHERE organization_id = 'cli-linear'`
        assert.deepStrictEqual(rows, [{ linear_organization_id: "lin-ws-cli", app_user_name: "bosun", sealed: true }])
      })
    )

    it.effect(
      "linear connect with an OAuth grant keeps it sealed; a grant given in part is refused and writes nothing",
      () =>
        Effect.gen(function* () {
          yield* Effect.flatMap(OrganizationsRepo, (organizations) => organizations.ensure("cli-linear-oauth")).pipe(
            Effect.provide(services)
          )
          const base = [
            "linear",
            "connect",
            "--org",
            "cli-linear-oauth",
            "--workspace",
            "lin-ws-cli-oauth",
            "--webhook-secret-file",
            file("linear-webhook-oauth", WEBHOOK),
            "--access-token-file",
            file("linear-oauth-token", "lin_oauth_cli_access_7a8b")
          ]
          const partial = yield* bosun([...base, "--oauth-client-id", "lin-cli-client"])
          assert.notStrictEqual(partial.code, 0)
          assert.include(partial.stderr, "an OAuth grant needs --access-token-file, --oauth-client-id")
          const sql = yield* SqlClient.SqlClient
          const none = yield* sql`SELECT 1 FROM linear_connections WHERE organization_id = 'cli-linear-oauth'`
          assert.strictEqual(none.length, 0)

          const connected = yield* bosun([
            ...base,
            "--oauth-client-id",
            "lin-cli-client",
            "--oauth-client-secret-file",
            file("linear-client-secret", "lin-cli-client-secret-3c4d\n"),
            "--refresh-token-file",
            file("linear-refresh", "lin_refresh_cli_5e6f"),
            "--expires-in",
            "7200"
          ])
          assert.strictEqual(connected.code, 0, connected.stderr)
          assert.strictEqual(
            connected.stdout.trim(),
            "cli-linear-oauth is connected to Linear workspace lin-ws-cli-oauth with an OAuth grant Bosun renews"
          )
          const [row] = yield* sql<{ client_id: string; sealed: boolean; seconds: number }>`
          SELECT oauth_client_id AS client_id,
                 position('lin_refresh_cli_5e6f'::bytea IN refresh_token) = 0
                   AND position('lin-cli-client-secret-3c4d'::bytea IN oauth_client_secret) = 0 AS sealed,
                 extract(epoch FROM access_token_expires_at - now())::int AS seconds
          FROM linear_connections WHERE organization_id = 'cli-linear-oauth'`
          assert.strictEqual(row?.client_id, "lin-cli-client")
          assert.strictEqual(row?.sealed, true)
          assert.isAtLeast(row?.seconds ?? 0, 7_100)
          assert.isAtMost(row?.seconds ?? 0, 7_200)
        })
    )
  }
)
