/**
 * The operator endpoints behind the bootstrap token, over real HTTP and a real database
 * (docs/interface.md: Bootstrap-token endpoints; Authentication 2, 5, 8; Errors):
 * `PUT .../github-app` seals the App credentials and returns only client_id, id and slug; the
 * secret-rotation endpoints queue and report runs, one at a time; a missing or wrong token is 401
 * and writes nothing; an instance with no token configured answers 503.
 */
import { generateKeyPairSync } from "node:crypto"
import type { SecretRotationRun } from "@bosun/domain"
import { eventually, LogCapture } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { GithubAppsRepo } from "../../src/outbound/github/GithubAppsRepo.ts"
import { layerTestServer, logsNamed, request, TEST_BOOTSTRAP_TOKEN, type TestResponse } from "../support/TestServer.ts"

const rsaKeys = generateKeyPairSync("rsa", { modulusLength: 2048 })
const RSA_PKCS8 = rsaKeys.privateKey.export({ type: "pkcs8", format: "pem" }).toString()
const RSA_PKCS1 = rsaKeys.privateKey.export({ type: "pkcs1", format: "pem" }).toString()
const EC_PKCS8 = generateKeyPairSync("ec", { namedCurve: "P-256" })
  .privateKey.export({ type: "pkcs8", format: "pem" })
  .toString()
const GARBAGE_PEM = "-----BEGIN PRIVATE KEY-----\ngarbage-pem-body-55aa0c31\n-----END PRIVATE KEY-----\n"

/** A distinctive run of a PEM's base64 body: whether key material leaked, not just its header. */
const pemBodySlice = (pem: string) => pem.split("\n").slice(2, 3).join("").slice(0, 48)

const AUTH = { authorization: `Bearer ${TEST_BOOTSTRAP_TOKEN}` }
const JSON_HEADERS = { "content-type": "application/json" }

interface AppConfiguration {
  readonly client_id: string
  readonly client_secret: string
  readonly github_app_id: number
  readonly github_app_slug: string
  readonly private_key: string
  readonly webhook_secret: string
}

/** A valid configuration whose secrets are unique to `tag`, so a leak can be traced to its request. */
const appConfiguration = (tag: string, overrides: Partial<AppConfiguration> = {}): AppConfiguration => ({
  client_id: `Iv1.client-${tag}`,
  client_secret: `client-secret-plain-${tag}-5f0c1e`,
  github_app_id: 4242,
  github_app_slug: `bosun-app-${tag}`,
  private_key: RSA_PKCS8,
  webhook_secret: `webhook-secret-plain-${tag}-9d3b7a`,
  ...overrides
})

const putGithubApp = (organizationId: string, body: unknown, headers: Record<string, string> = AUTH) =>
  request(`/api/v1/organizations/${organizationId}/github-app`, {
    method: "PUT",
    headers: { ...JSON_HEADERS, ...headers },
    body: JSON.stringify(body)
  })

const postRotation = (body: unknown, headers: Record<string, string> = AUTH) =>
  request("/api/v1/instance/secret-rotations", {
    method: "POST",
    headers: { ...JSON_HEADERS, ...headers },
    body: JSON.stringify(body)
  })

const getRotation = (id: string, headers: Record<string, string> = AUTH) =>
  request(`/api/v1/instance/secret-rotations/${id}`, { headers })

/** Asserts the error envelope exactly (`{"error": {"code", "message"}}`) and returns its message. */
const assertEnvelope = (response: TestResponse, status: number, code: string): string => {
  assert.strictEqual(response.status, status, response.text)
  const body = response.json as { error: { code: string; message: string } }
  assert.deepStrictEqual(Object.keys(body), ["error"])
  assert.deepStrictEqual(Object.keys(body.error).sort(), ["code", "message"])
  assert.strictEqual(body.error.code, code)
  assert.isString(body.error.message)
  assert.isAbove(body.error.message.length, 0)
  return body.error.message
}

const RUN_KEYS = [
  "batch_size",
  "created_at",
  "dry_run",
  "error",
  "failed_secrets",
  "finished_at",
  "id",
  "processed_secrets",
  "remaining",
  "started_at",
  "status",
  "target_key_version",
  "total_secrets"
]

const isIsoTimestamp = (value: unknown) =>
  typeof value === "string" && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/.test(value) && !Number.isNaN(Date.parse(value))

/** The run of a `{"data": run}` body, its shape checked field by field. */
const runOf = (response: TestResponse): SecretRotationRun => {
  const body = response.json as { data: SecretRotationRun }
  assert.deepStrictEqual(Object.keys(body), ["data"])
  const run = body.data
  assert.deepStrictEqual(Object.keys(run).sort(), RUN_KEYS)
  assert.isString(run.id)
  assert.isAbove(run.id.length, 0)
  assert.include(["QUEUED", "RUNNING", "SUCCEEDED", "FAILED"], run.status)
  assert.isBoolean(run.dry_run)
  for (const count of [
    run.batch_size,
    run.target_key_version,
    run.total_secrets,
    run.processed_secrets,
    run.remaining,
    run.failed_secrets
  ]) {
    assert.isTrue(Number.isInteger(count) && count >= 0, String(count))
  }
  assert.isTrue(isIsoTimestamp(run.created_at), String(run.created_at))
  assert.isTrue(run.started_at === null || isIsoTimestamp(run.started_at), String(run.started_at))
  assert.isTrue(run.finished_at === null || isIsoTimestamp(run.finished_at), String(run.finished_at))
  return run
}

/** Everything the GitHub App endpoint could write, as plain comparable rows. */
const githubAppState = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const apps = yield* sql`
    SELECT organization_id, github_app_id::text AS github_app_id, slug, client_id,
           encode(client_secret, 'hex') AS client_secret, encode(private_key, 'hex') AS private_key,
           encode(webhook_secret, 'hex') AS webhook_secret, updated_at::text AS updated_at
    FROM github_apps ORDER BY organization_id`
  const organizations = yield* sql`
    SELECT id, name, updated_at::text AS updated_at FROM organizations ORDER BY id`
  return {
    apps: apps.map((row) => ({ ...row })),
    organizations: organizations.map((row) => ({ ...row }))
  }
})

const organizationExists = (id: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM organizations WHERE id = ${id}`
    return rows[0]?.n === 1
  })

const rotationCount = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM secret_rotations`
  return rows[0]?.n ?? -1
})

/** Waits until no rotation is queued or running, so the next one starts from a quiet instance. */
const noActiveRotation = eventually(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM secret_rotations WHERE status IN ('QUEUED', 'RUNNING')`
    return rows[0]?.n ?? -1
  }),
  (n) => n === 0
)

/** Polls the run until it has finished (either way), with eventually's deadline. */
const finishedRun = (id: string) =>
  Effect.map(
    eventually(getRotation(id), (response) => {
      const status = (response.json as { data?: { status?: string } } | undefined)?.data?.status
      return response.status === 200 && (status === "SUCCEEDED" || status === "FAILED")
    }),
    runOf
  )

/**
 * A run another worker holds (a far-future lease, so this server's worker never takes it over),
 * deleted again when the scope closes so later tests start from a quiet instance.
 */
const foreignRunningRotation = (dryRun: boolean) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      yield* noActiveRotation
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ id: string }>`
        INSERT INTO secret_rotations
          (dry_run, batch_size, target_key_version, target_key_fingerprint, status, lease_owner, lease_expires_at)
        VALUES (${dryRun}, 100, 1, 'someone-elses-key', 'RUNNING', 'someone-else', now() + interval '1 hour')
        RETURNING id`
      assert.isDefined(row)
      return row?.id ?? ""
    }),
    (id) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`DELETE FROM secret_rotations WHERE id = ${id}`
      }).pipe(Effect.orDie)
  )

layer(layerTestServer(), { excludeTestServices: true })("PUT /organizations/:organization_id/github-app", (it) => {
  describe("success", () => {
    it.effect("answers 200 with exactly client_id, id and slug, and no secret anywhere in the response", () =>
      Effect.gen(function* () {
        const app = appConfiguration("shape", { github_app_id: 987654 })
        const response = yield* putGithubApp("org-shape", app)
        assert.strictEqual(response.status, 200, response.text)
        assert.strictEqual(response.headers.get("content-type"), "application/json")
        assert.deepStrictEqual(response.json, {
          data: { client_id: "Iv1.client-shape", id: 987654, slug: "bosun-app-shape" }
        })
        for (const secret of [app.client_secret, app.webhook_secret, pemBodySlice(RSA_PKCS8), "PRIVATE KEY"]) {
          assert.notInclude(response.text, secret)
        }
      })
    )

    it.effect("creates the organization when it does not exist yet", () =>
      Effect.gen(function* () {
        assert.isFalse(yield* organizationExists("org-created"))
        const response = yield* putGithubApp("org-created", appConfiguration("created"))
        assert.strictEqual(response.status, 200, response.text)
        assert.isTrue(yield* organizationExists("org-created"))
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ organization_id: string; github_app_id: string; slug: string; client_id: string }>`
          SELECT organization_id, github_app_id::text AS github_app_id, slug, client_id
          FROM github_apps WHERE organization_id = 'org-created'`
        assert.deepStrictEqual(
          rows.map((row) => ({ ...row })),
          [
            {
              organization_id: "org-created",
              github_app_id: "4242",
              slug: "bosun-app-created",
              client_id: "Iv1.client-created"
            }
          ]
        )
      })
    )

    it.effect(
      "replaces the configuration on a second PUT: still one row, with the new id, slug, client and secrets",
      () =>
        Effect.gen(function* () {
          const first = appConfiguration("first", { github_app_id: 11 })
          const second = appConfiguration("second", { github_app_id: 22, private_key: RSA_PKCS1 })
          assert.strictEqual((yield* putGithubApp("org-replaced", first)).status, 200)
          const response = yield* putGithubApp("org-replaced", second)
          assert.strictEqual(response.status, 200, response.text)
          assert.deepStrictEqual(response.json, {
            data: { client_id: "Iv1.client-second", id: 22, slug: "bosun-app-second" }
          })
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ github_app_id: string; slug: string; client_id: string }>`
          SELECT github_app_id::text AS github_app_id, slug, client_id
          FROM github_apps WHERE organization_id = 'org-replaced'`
          assert.deepStrictEqual(
            rows.map((row) => ({ ...row })),
            [{ github_app_id: "22", slug: "bosun-app-second", client_id: "Iv1.client-second" }]
          )
          const organizations = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM organizations WHERE id = 'org-replaced'`
          assert.strictEqual(organizations[0]?.n, 1)
          const stored = yield* (yield* GithubAppsRepo).find("org-replaced")
          assert.isTrue(Option.isSome(stored))
          if (Option.isSome(stored)) {
            assert.strictEqual(Redacted.value(stored.value.clientSecret), second.client_secret)
            assert.strictEqual(Redacted.value(stored.value.privateKey), RSA_PKCS1)
            assert.strictEqual(Redacted.value(stored.value.webhookSecret), second.webhook_secret)
          }
        })
    )

    it.effect("accepts a 128-character organization_id", () =>
      Effect.gen(function* () {
        const id = "o".repeat(128)
        const response = yield* putGithubApp(id, appConfiguration("long-id"))
        assert.strictEqual(response.status, 200, response.text)
        assert.isTrue(yield* organizationExists(id))
      })
    )
  })

  describe("audit evidence", () => {
    it.effect("records who configured the App, under which request, without any secret", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const body = appConfiguration("audited")
        const response = yield* putGithubApp("org-audited", body)
        assert.strictEqual(response.status, 200)
        const rows = yield* sql<{
          actor_kind: string
          actor_user_id: string | null
          action: string
          target: string
          request_id: string
          details: unknown
        }>`
          SELECT actor_kind, actor_user_id, action, target, request_id, details FROM audit_events
          WHERE organization_id = 'org-audited'`
        assert.deepStrictEqual(rows, [
          {
            actor_kind: "operator",
            actor_user_id: null,
            action: "github_app.configure",
            target: "github_app:4242",
            request_id: response.headers.get("x-request-id") ?? "",
            details: { client_id: body.client_id, slug: body.github_app_slug }
          }
        ])
        const text = JSON.stringify(yield* sql`SELECT audit_events::text AS row FROM audit_events`)
        for (const secret of [body.client_secret, body.webhook_secret, pemBodySlice(body.private_key)]) {
          assert.notInclude(text, secret)
        }
      })
    )
  })

  describe("sealed columns", () => {
    it.effect(
      "stores client_secret, private_key and webhook_secret as envelopes (format 1, key version 1) without their plaintext",
      () =>
        Effect.gen(function* () {
          const app = appConfiguration("sealed")
          assert.strictEqual((yield* putGithubApp("org-sealed", app)).status, 200)
          const sql = yield* SqlClient.SqlClient
          const plaintexts = {
            client_secret: app.client_secret,
            private_key: app.private_key,
            webhook_secret: app.webhook_secret
          }
          const [row] = yield* sql<Record<string, number | boolean>>`
          SELECT
            position(convert_to(${plaintexts.client_secret}::text, 'UTF8') in client_secret) AS client_secret_at,
            position(convert_to(${plaintexts.private_key}::text, 'UTF8') in private_key) AS private_key_at,
            position(convert_to(${pemBodySlice(app.private_key)}::text, 'UTF8') in private_key) AS private_key_body_at,
            position(convert_to(${plaintexts.webhook_secret}::text, 'UTF8') in webhook_secret) AS webhook_secret_at,
            get_byte(client_secret, 0) AS client_secret_format,
            get_byte(private_key, 0) AS private_key_format,
            get_byte(webhook_secret, 0) AS webhook_secret_format,
            substring(client_secret from 2 for 4) = '\\x00000001'::bytea AS client_secret_v1,
            substring(private_key from 2 for 4) = '\\x00000001'::bytea AS private_key_v1,
            substring(webhook_secret from 2 for 4) = '\\x00000001'::bytea AS webhook_secret_v1,
            length(client_secret) > length(${plaintexts.client_secret}::text) AS client_secret_longer
          FROM github_apps WHERE organization_id = 'org-sealed'`
          assert.deepStrictEqual(
            { ...row },
            {
              client_secret_at: 0,
              private_key_at: 0,
              private_key_body_at: 0,
              webhook_secret_at: 0,
              client_secret_format: 1,
              private_key_format: 1,
              webhook_secret_format: 1,
              client_secret_v1: true,
              private_key_v1: true,
              webhook_secret_v1: true,
              client_secret_longer: true
            }
          )
        })
    )

    it.effect("the envelopes open to the submitted values", () =>
      Effect.gen(function* () {
        const app = appConfiguration("opened")
        assert.strictEqual((yield* putGithubApp("org-opened", app)).status, 200)
        const stored = yield* (yield* GithubAppsRepo).find("org-opened")
        assert.isTrue(Option.isSome(stored))
        if (Option.isSome(stored)) {
          assert.strictEqual(stored.value.githubAppId, 4242)
          assert.strictEqual(stored.value.slug, "bosun-app-opened")
          assert.strictEqual(stored.value.clientId, "Iv1.client-opened")
          assert.strictEqual(Redacted.value(stored.value.clientSecret), app.client_secret)
          assert.strictEqual(Redacted.value(stored.value.privateKey), app.private_key)
          assert.strictEqual(Redacted.value(stored.value.webhookSecret), app.webhook_secret)
        }
      })
    )
  })

  describe("authentication", () => {
    it.effect(
      "rejects a missing token, a wrong token, a token of another length, an empty bearer and the Basic scheme with 401 and writes nothing",
      () =>
        Effect.gen(function* () {
          // An existing configuration a rejected request could replace, and a fresh id it could create.
          assert.strictEqual((yield* putGithubApp("org-guarded", appConfiguration("guarded"))).status, 200)
          const before = yield* githubAppState
          const wrongSameLength = `${TEST_BOOTSTRAP_TOKEN.slice(0, -1)}${TEST_BOOTSTRAP_TOKEN.endsWith("x") ? "y" : "x"}`
          assert.strictEqual(wrongSameLength.length, TEST_BOOTSTRAP_TOKEN.length)
          const attempts: ReadonlyArray<readonly [string, Record<string, string>]> = [
            ["missing", {}],
            ["wrong, same length", { authorization: `Bearer ${wrongSameLength}` }],
            ["longer", { authorization: `Bearer ${TEST_BOOTSTRAP_TOKEN}0` }],
            ["shorter", { authorization: `Bearer ${TEST_BOOTSTRAP_TOKEN.slice(0, 8)}` }],
            ["empty bearer", { authorization: "Bearer " }],
            ["Basic scheme", { authorization: `Basic ${Buffer.from(`x:${TEST_BOOTSTRAP_TOKEN}`).toString("base64")}` }],
            ["Basic scheme, raw token", { authorization: `Basic ${TEST_BOOTSTRAP_TOKEN}` }],
            ["token without scheme", { authorization: TEST_BOOTSTRAP_TOKEN }]
          ]
          for (const [label, headers] of attempts) {
            for (const organizationId of ["org-guarded", "org-never-created"]) {
              const response = yield* putGithubApp(organizationId, appConfiguration(`attacker-${label}`), headers)
              const message = assertEnvelope(response, 401, "unauthorized")
              assert.notInclude(message, TEST_BOOTSTRAP_TOKEN, label)
              assert.notInclude(response.text, "client-secret-plain", label)
            }
          }
          assert.deepStrictEqual(yield* githubAppState, before)
          assert.isFalse(yield* organizationExists("org-never-created"))
        })
    )

    it.effect("checks the token before the body: an invalid body with a wrong or missing token is 401, not 400", () =>
      Effect.gen(function* () {
        const invalid = appConfiguration("unauthenticated-invalid", { github_app_id: 0, private_key: "not a key" })
        for (const headers of [{}, { authorization: "Bearer wrong-token" }]) {
          assertEnvelope(yield* putGithubApp("org-unauth-invalid", invalid, headers), 401, "unauthorized")
          assertEnvelope(yield* putGithubApp("x".repeat(129), invalid, headers), 401, "unauthorized")
          assertEnvelope(yield* postRotation({ batch_size: 0 }, headers), 401, "unauthorized")
        }
        assert.isFalse(yield* organizationExists("org-unauth-invalid"))
      })
    )
  })

  describe("validation", () => {
    const invalidBodies: ReadonlyArray<{
      readonly name: string
      readonly field: string
      readonly body: Record<string, unknown>
      /** A submitted value that must not come back in the message. */
      readonly echo?: string
    }> = [
      { name: "a fractional github_app_id", field: "github_app_id", body: { github_app_id: 12.5 } },
      { name: "a zero github_app_id", field: "github_app_id", body: { github_app_id: 0 } },
      { name: "a negative github_app_id", field: "github_app_id", body: { github_app_id: -3 } },
      {
        name: "a string github_app_id",
        field: "github_app_id",
        body: { github_app_id: "app-id-as-string-913" },
        echo: "app-id-as-string-913"
      },
      {
        name: "a slug with uppercase letters",
        field: "github_app_slug",
        body: { github_app_slug: "Bosun-App-Upper" },
        echo: "Bosun-App-Upper"
      },
      {
        name: "a slug with spaces",
        field: "github_app_slug",
        body: { github_app_slug: "bosun app spaced" },
        echo: "bosun app spaced"
      },
      { name: "an empty client_secret", field: "client_secret", body: { client_secret: "" } },
      { name: "a missing webhook_secret", field: "webhook_secret", body: { webhook_secret: undefined } },
      {
        name: "an EC private key",
        field: "private_key",
        body: { private_key: EC_PKCS8 },
        echo: pemBodySlice(EC_PKCS8)
      },
      {
        name: "garbage between PEM BEGIN and END lines",
        field: "private_key",
        body: { private_key: GARBAGE_PEM },
        echo: "garbage-pem-body-55aa0c31"
      },
      {
        name: "a private_key that is not PEM",
        field: "private_key",
        body: { private_key: "not-a-pem-private-key-7e21" },
        echo: "not-a-pem-private-key-7e21"
      },
      {
        name: "an RSA public key as private_key",
        field: "private_key",
        body: { private_key: rsaKeys.publicKey.export({ type: "spki", format: "pem" }).toString() }
      }
    ]

    for (const { name, field, body, echo } of invalidBodies) {
      it.effect(`rejects ${name} with 400 invalid_body naming "${field}", echoing nothing, writing nothing`, () =>
        Effect.gen(function* () {
          const before = yield* githubAppState
          const app = { ...appConfiguration(`invalid-${field.replaceAll("_", "-")}`), ...body }
          for (const organizationId of ["org-shape", "org-invalid-never-created"]) {
            const response = yield* putGithubApp(organizationId, app)
            const message = assertEnvelope(response, 400, "invalid_body")
            assert.include(message, `"${field}"`)
            for (const secret of [
              app.client_secret,
              app.webhook_secret,
              pemBodySlice(RSA_PKCS8),
              ...(echo === undefined ? [] : [echo])
            ]) {
              if (typeof secret === "string" && secret !== "") assert.notInclude(response.text, secret)
            }
          }
          assert.deepStrictEqual(yield* githubAppState, before)
          assert.isFalse(yield* organizationExists("org-invalid-never-created"))
        })
      )
    }

    it.effect("rejects a 129-character organization_id with 400 invalid_path_parameter and writes nothing", () =>
      Effect.gen(function* () {
        const before = yield* githubAppState
        const id = "p".repeat(129)
        const response = yield* putGithubApp(id, appConfiguration("too-long"))
        const message = assertEnvelope(response, 400, "invalid_path_parameter")
        assert.include(message, '"organization_id"')
        assert.notInclude(message, id)
        assert.deepStrictEqual(yield* githubAppState, before)
      })
    )
  })

  describe("logs", () => {
    it.effect("never logs a submitted secret, key material or the token, on success or failure", () =>
      Effect.gen(function* () {
        const capture = yield* LogCapture
        yield* capture.clear
        const ok = appConfiguration("logged")
        const bad = appConfiguration("logged-bad", { github_app_slug: "Not A Slug" })
        const ec = appConfiguration("logged-ec", { private_key: EC_PKCS8 })
        assert.strictEqual((yield* putGithubApp("org-logged", ok)).status, 200)
        assert.strictEqual((yield* putGithubApp("org-logged", bad)).status, 400)
        assert.strictEqual((yield* putGithubApp("org-logged", ec)).status, 400)
        assert.strictEqual(
          (yield* putGithubApp("org-logged", ok, { authorization: "Bearer wrong-token-6c" })).status,
          401
        )

        const lines = (yield* logsNamed("http_request")).filter(
          (line) => line.route === "/api/v1/organizations/:organization_id/github-app"
        )
        assert.deepStrictEqual(
          lines.map((line) => line.status),
          [200, 400, 400, 401]
        )
        assert.lengthOf(yield* logsNamed("http_request_failed"), 0)

        const everything = [...capture.lines, JSON.stringify(yield* capture.records)]
        for (const text of everything) {
          for (const secret of [
            ok.client_secret,
            ok.webhook_secret,
            bad.client_secret,
            bad.webhook_secret,
            ec.client_secret,
            ec.webhook_secret,
            pemBodySlice(RSA_PKCS8),
            pemBodySlice(EC_PKCS8),
            "PRIVATE KEY",
            TEST_BOOTSTRAP_TOKEN,
            "wrong-token-6c",
            "Bearer"
          ]) {
            assert.notInclude(text, secret)
          }
        }
      })
    )
  })
})

layer(layerTestServer(), { excludeTestServices: true })("/instance/secret-rotations", (it) => {
  describe("authentication", () => {
    it.effect("rejects POST and GET without a token or with a wrong one with 401 and queues nothing", () =>
      Effect.gen(function* () {
        const before = yield* rotationCount
        for (const headers of [
          {},
          { authorization: "Bearer not-the-bootstrap-token" },
          { authorization: `Basic ${TEST_BOOTSTRAP_TOKEN}` }
        ]) {
          assertEnvelope(yield* postRotation({ dry_run: true }, headers), 401, "unauthorized")
          assertEnvelope(yield* postRotation({ dry_run: false }, headers), 401, "unauthorized")
          assertEnvelope(yield* getRotation("any-id", headers), 401, "unauthorized")
        }
        assert.strictEqual(yield* rotationCount, before)
      })
    )
  })

  describe("validation", () => {
    for (const [label, batchSize] of [
      ["0", 0],
      ["201", 201],
      ["1.5", 1.5],
      ['"100" (a string)', "100"],
      ["-1", -1]
    ] as const) {
      it.effect(`rejects batch_size ${label} with 400 invalid_body naming batch_size and queues nothing`, () =>
        Effect.gen(function* () {
          const before = yield* rotationCount
          const message = assertEnvelope(
            yield* postRotation({ dry_run: true, batch_size: batchSize }),
            400,
            "invalid_body"
          )
          assert.include(message, '"batch_size"')
          assert.strictEqual(yield* rotationCount, before)
        })
      )
    }

    it.effect("rejects a body without dry_run, or with a non-boolean one, with 400 invalid_body naming dry_run", () =>
      Effect.gen(function* () {
        const before = yield* rotationCount
        for (const body of [{}, { batch_size: 10 }, { dry_run: "true" }, { dry_run: 1 }]) {
          const message = assertEnvelope(yield* postRotation(body), 400, "invalid_body")
          assert.include(message, '"dry_run"', JSON.stringify(body))
        }
        assert.strictEqual(yield* rotationCount, before)
      })
    )

    it.effect("rejects GET with a 129-character id with 400 invalid_path_parameter", () =>
      Effect.gen(function* () {
        const id = "r".repeat(129)
        const message = assertEnvelope(yield* getRotation(id), 400, "invalid_path_parameter")
        assert.include(message, '"id"')
        assert.notInclude(message, id)
      })
    )

    it.effect("answers GET of an unknown id with 404 not_found", () =>
      Effect.gen(function* () {
        assertEnvelope(yield* getRotation("no-such-rotation"), 404, "not_found")
        assertEnvelope(yield* getRotation("00000000-0000-0000-0000-000000000000"), 404, "not_found")
      })
    )
  })

  describe("dry run", () => {
    it.effect(
      "queues a dry run with 202 (batch_size 100 by default) that SUCCEEDS counting 3 envelopes per configured app, none remaining",
      () =>
        Effect.gen(function* () {
          for (const organizationId of ["org-rot-a", "org-rot-b"]) {
            assert.strictEqual((yield* putGithubApp(organizationId, appConfiguration(organizationId))).status, 200)
          }
          const sql = yield* SqlClient.SqlClient
          const [counts] = yield* sql<{ apps: number; user_secrets: number }>`
          SELECT (SELECT count(*)::int FROM github_apps) AS apps,
                 (SELECT count(*)::int FROM organization_secrets) AS user_secrets`
          assert.deepStrictEqual({ ...counts }, { apps: 2, user_secrets: 0 })
          yield* noActiveRotation

          const created = yield* postRotation({ dry_run: true })
          assert.strictEqual(created.status, 202, created.text)
          const queued = runOf(created)
          assert.include(["QUEUED", "RUNNING", "SUCCEEDED"], queued.status)
          assert.strictEqual(queued.dry_run, true)
          assert.strictEqual(queued.batch_size, 100)
          assert.strictEqual(queued.target_key_version, 1)

          const run = yield* finishedRun(queued.id)
          assert.strictEqual(run.id, queued.id)
          assert.strictEqual(run.status, "SUCCEEDED")
          assert.strictEqual(run.dry_run, true)
          assert.strictEqual(run.batch_size, 100)
          assert.strictEqual(run.target_key_version, 1)
          assert.strictEqual(run.total_secrets, 6)
          assert.strictEqual(run.processed_secrets, 0)
          assert.strictEqual(run.remaining, 0)
          assert.strictEqual(run.failed_secrets, 0)
          assert.strictEqual(run.created_at, queued.created_at)
          assert.isNotNull(run.started_at)
          assert.isNotNull(run.finished_at)
          assert.isAtLeast(Date.parse(run.finished_at ?? ""), Date.parse(run.started_at ?? ""))
        })
    )

    it.effect(
      "runs a dry run in batches of 1, counting every envelope and leaving each one byte-for-byte unchanged",
      () =>
        Effect.gen(function* () {
          assert.strictEqual((yield* putGithubApp("org-rot-c", appConfiguration("org-rot-c"))).status, 200)
          const before = yield* githubAppState
          assert.lengthOf(before.apps, 3)
          yield* noActiveRotation

          const created = yield* postRotation({ dry_run: true, batch_size: 1 })
          assert.strictEqual(created.status, 202, created.text)
          const queued = runOf(created)
          assert.strictEqual(queued.batch_size, 1)
          const run = yield* finishedRun(queued.id)
          assert.strictEqual(run.status, "SUCCEEDED")
          assert.strictEqual(run.batch_size, 1)
          assert.strictEqual(run.total_secrets, 9)
          assert.strictEqual(run.processed_secrets, 0)
          assert.strictEqual(run.remaining, 0)
          assert.strictEqual(run.failed_secrets, 0)
          assert.deepStrictEqual(yield* githubAppState, before)
        })
    )

    it.effect("accepts batch_size 200, the upper bound, reports it on the run, and records the operator's start", () =>
      Effect.gen(function* () {
        yield* noActiveRotation
        const created = yield* postRotation({ dry_run: true, batch_size: 200 })
        assert.strictEqual(created.status, 202, created.text)
        assert.strictEqual(runOf(created).batch_size, 200)
        const run = yield* finishedRun(runOf(created).id)
        assert.strictEqual(run.status, "SUCCEEDED")
        assert.strictEqual(run.batch_size, 200)

        const sql = yield* SqlClient.SqlClient
        const audits = yield* sql<{
          actor_kind: string
          organization_id: string | null
          action: string
          request_id: string | null
          details: Record<string, unknown>
        }>`SELECT actor_kind, organization_id, action, request_id, details FROM audit_events
           WHERE target = ${`secret_rotation:${run.id}`}`
        assert.lengthOf(audits, 1)
        const [audit] = audits
        assert.deepStrictEqual(
          { ...audit, request_id: typeof audit?.request_id },
          {
            actor_kind: "operator",
            organization_id: null,
            action: "secret_rotation.dry_run",
            request_id: "string",
            details: { batch_size: 200, target_key_version: 1 }
          }
        )
      })
    )
  })

  describe("one rotation at a time", () => {
    for (const running of [true, false]) {
      const kind = running ? "dry run" : "real run"
      const other = running ? "real run" : "dry run"

      it.effect(
        `answers a ${other} POST while another worker's ${kind} is RUNNING with 409 rotation_in_progress naming it, queuing nothing`,
        () =>
          Effect.scoped(
            Effect.gen(function* () {
              const id = yield* foreignRunningRotation(running)
              const before = yield* rotationCount
              const response = yield* postRotation({ dry_run: !running })
              const message = assertEnvelope(response, 409, "rotation_in_progress")
              assert.include(message, id)
              assert.strictEqual(yield* rotationCount, before)
            })
          )
      )

      it.effect(
        `answers a ${kind} POST while another worker's ${kind} is RUNNING with 202 and that same run, creating nothing`,
        () =>
          Effect.scoped(
            Effect.gen(function* () {
              const id = yield* foreignRunningRotation(running)
              const before = yield* rotationCount
              const response = yield* postRotation({ dry_run: running, batch_size: 7 })
              assert.strictEqual(response.status, 202, response.text)
              const run = runOf(response)
              assert.strictEqual(run.id, id)
              assert.strictEqual(run.status, "RUNNING")
              assert.strictEqual(run.dry_run, running)
              assert.strictEqual(run.batch_size, 100)
              assert.strictEqual(run.target_key_version, 1)
              assert.strictEqual(yield* rotationCount, before)
              const fetched = runOf(yield* getRotation(id))
              assert.deepStrictEqual(fetched, run)
            })
          )
      )
    }
  })
})

layer(layerTestServer({ secrets: { bootstrapToken: null } }), { excludeTestServices: true })(
  "bootstrap endpoints with no token configured",
  (it) => {
    const headerVariants: ReadonlyArray<Record<string, string>> = [
      {},
      AUTH,
      { authorization: "Bearer some-other-token" },
      { authorization: "Bearer " }
    ]

    it.effect(
      "answers PUT github-app with 503 bootstrap_token_unset, with or without Authorization, writing nothing",
      () =>
        Effect.gen(function* () {
          for (const headers of headerVariants) {
            const message = assertEnvelope(
              yield* putGithubApp("org-unset", appConfiguration("unset"), headers),
              503,
              "bootstrap_token_unset"
            )
            assert.notInclude(message, "client-secret-plain")
          }
          assert.deepStrictEqual(yield* githubAppState, { apps: [], organizations: [] })
        })
    )

    it.effect(
      "answers POST secret-rotations with 503 bootstrap_token_unset, with or without Authorization, queuing nothing",
      () =>
        Effect.gen(function* () {
          for (const headers of headerVariants) {
            assertEnvelope(yield* postRotation({ dry_run: true }, headers), 503, "bootstrap_token_unset")
            assertEnvelope(yield* postRotation({ dry_run: false }, headers), 503, "bootstrap_token_unset")
          }
          assert.strictEqual(yield* rotationCount, 0)
        })
    )

    it.effect("answers GET secret-rotations/:id with 503 bootstrap_token_unset, with or without Authorization", () =>
      Effect.gen(function* () {
        for (const headers of headerVariants) {
          assertEnvelope(yield* getRotation("any-id", headers), 503, "bootstrap_token_unset")
        }
      })
    )
  }
)

layer(layerTestServer({ secrets: { bootstrapToken: "" } }), { excludeTestServices: true })(
  "bootstrap endpoints with an empty token configured",
  (it) => {
    it.effect(
      "treats an empty BOSUN_BOOTSTRAP_TOKEN as none: 503 bootstrap_token_unset, even for an empty bearer",
      () =>
        Effect.gen(function* () {
          for (const headers of [{}, { authorization: "Bearer " }, { authorization: "Bearer x" }]) {
            assertEnvelope(yield* postRotation({ dry_run: true }, headers), 503, "bootstrap_token_unset")
          }
          assert.strictEqual(yield* rotationCount, 0)
        })
    )
  }
)
