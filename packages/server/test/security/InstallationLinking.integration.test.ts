/**
 * Which GitHub account an organization mirrors is the operator's decision: an `installation`
 * webhook may complete it (the account id) but never make it. Driven as an attacker would: the
 * bootstrap endpoint configures the App, the operator CLI names the account, and correctly signed
 * installation deliveries for other accounts are sent to the real webhook route.
 */
import { generateKeyPairSync } from "node:crypto"
import { FakeGithub, LogCapture, TestDatabase } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { APP_ID, deliver, processed, SECRET } from "../support/GithubDeliveries.ts"
import { layerServerWithFakeGithub } from "../support/InstalledApp.ts"
import { runCli } from "../support/Process.ts"
import { generateMasterKey, request, TEST_BOOTSTRAP_TOKEN } from "../support/TestServer.ts"

const PRIVATE_KEY = generateKeyPairSync("rsa", { modulusLength: 2048 })
  .privateKey.export({ type: "pkcs8", format: "pem" })
  .toString()

const AUTH = { authorization: `Bearer ${TEST_BOOTSTRAP_TOKEN}`, "content-type": "application/json" }

/** `PUT .../github-app` as the operator does it: the organization is created with its App. */
const configureApp = (org: string) =>
  Effect.gen(function* () {
    const response = yield* request(`/api/v1/organizations/${org}/github-app`, {
      method: "PUT",
      headers: AUTH,
      body: JSON.stringify({
        client_id: `Iv1.${org}`,
        client_secret: `${org}-client-secret`,
        github_app_id: APP_ID,
        github_app_slug: "bosun-linking",
        private_key: PRIVATE_KEY,
        webhook_secret: SECRET
      })
    })
    assert.isTrue(response.status === 200 || response.status === 201 || response.status === 204, response.text)
  })

/** `bosun organizations link` against this test's database, GitHub at `githubApiUrl`. */
const link = (org: string, login: string, githubApiUrl: string) =>
  Effect.gen(function* () {
    const database = yield* TestDatabase
    return yield* runCli(["organizations", "link", "--org", org, "--github-login", login], {
      DATABASE_URL: database.url,
      BOSUN_DATA_DIR: "/nonexistent/never-created",
      BOSUN_MASTER_KEY: generateMasterKey(),
      BOSUN_GITHUB_API_URL: githubApiUrl
    })
  })

let sent = 0
const installationCreated = (account: { readonly id: number; readonly login: string }, repositoryId: number) =>
  deliver({
    id: `linking-${sent++}`,
    event: "installation",
    body: JSON.stringify({
      action: "created",
      installation: {
        id: 70_000 + sent,
        account: { ...account, type: "Organization" },
        app_id: APP_ID,
        target_type: "Organization"
      },
      repositories: [{ id: repositoryId, name: "app", full_name: `${account.login}/app`, private: true }],
      sender: { id: 1, login: account.login }
    })
  })

const organizationRow = (org: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ github_account_id: string | null; login: string | null }>`
      SELECT github_account_id::text AS github_account_id, login FROM organizations WHERE id = ${org}`
    return row
  })

const repositoryCount = (org: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{
      count: string
    }>`SELECT count(*)::text AS count FROM repositories WHERE organization_id = ${org}`
    return Number(row?.count ?? 0)
  })

const deliveryCount = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ count: string }>`SELECT count(*)::text AS count FROM github_deliveries`
  return Number(row?.count ?? 0)
})

const UNREACHABLE_GITHUB = "http://127.0.0.1:9/api/v3"

layer(layerServerWithFakeGithub, { excludeTestServices: true })(
  "installation webhooks and organization linking",
  (it) => {
    it.effect(
      "an installation on another account cannot take an organization set up for real-corp: refused, logged at warn with both logins, nothing written",
      () =>
        Effect.gen(function* () {
          const logs = yield* LogCapture
          yield* configureApp("orgc")
          const linked = yield* link("orgc", "real-corp", UNREACHABLE_GITHUB)
          assert.strictEqual(linked.code, 0, linked.stderr)
          assert.include(linked.stdout, "orgc now mirrors the GitHub account real-corp")

          const before = yield* deliveryCount
          const attack = yield* installationCreated({ id: 6666, login: "attacker-corp" }, 66_601)
          assert.strictEqual(attack.status, 202, attack.text)
          assert.deepStrictEqual(attack.json, { data: { accepted: false, duplicate: false } })
          assert.strictEqual(yield* deliveryCount, before)
          assert.deepStrictEqual(yield* organizationRow("orgc"), { github_account_id: null, login: "real-corp" })
          assert.strictEqual(yield* repositoryCount("orgc"), 0)
          const warned = (yield* logs.records).filter((line) => line.msg === "github_installation_link_refused")
          assert.lengthOf(warned, 1)
          assert.strictEqual(warned[0]?.level, "warn")
          assert.strictEqual(warned[0]?.installation_login, "attacker-corp")
          assert.include(String(warned[0]?.expected_logins), "real-corp")

          // The account it was set up for links it (logins compare case-insensitively) and its id is recorded.
          const real = yield* installationCreated({ id: 7777, login: "Real-Corp" }, 77_701)
          assert.deepStrictEqual(real.json, { data: { accepted: true, duplicate: false } })
          assert.isNull(yield* processed(`linking-${sent - 1}`))
          assert.deepStrictEqual(yield* organizationRow("orgc"), { github_account_id: "7777", login: "Real-Corp" })
          assert.strictEqual(yield* repositoryCount("orgc"), 1)

          // Once the id is known, an account that took the login over (renamed) does not match either.
          // (A server whose kept secrets predate the link may still record the delivery; the inbox
          // then refuses it by id.)
          const renamed = yield* installationCreated({ id: 6667, login: "real-corp" }, 66_701)
          if ((renamed.json as { data: { accepted: boolean } }).data.accepted) {
            assert.strictEqual(
              yield* processed(`linking-${sent - 1}`),
              "the organization is set up for the GitHub account Real-Corp, not real-corp"
            )
          }
          assert.deepStrictEqual(yield* organizationRow("orgc"), { github_account_id: "7777", login: "Real-Corp" })
          assert.strictEqual(yield* repositoryCount("orgc"), 1)
        })
    )

    it.effect("an organization the operator set up for no account takes no installation at all", () =>
      Effect.gen(function* () {
        yield* configureApp("org-unset")
        const before = yield* deliveryCount
        const attack = yield* installationCreated({ id: 6668, login: "whoever-installs-first" }, 66_801)
        assert.deepStrictEqual(attack.json, { data: { accepted: false, duplicate: false } })
        assert.strictEqual(yield* deliveryCount, before)
        assert.deepStrictEqual(yield* organizationRow("org-unset"), { github_account_id: null, login: null })
      })
    )

    it.effect(
      "bosun organizations link records the account id when GitHub answers, and refuses a login GitHub does not know",
      () =>
        Effect.gen(function* () {
          const fake = yield* FakeGithub
          fake.addInstallation({
            id: 80_001,
            appId: APP_ID,
            account: { id: 8_000_000_001, login: "Known-Corp", type: "Organization" },
            repositories: ["Known-Corp/app"]
          })
          yield* configureApp("org-known")
          const linked = yield* link("org-known", "known-corp", fake.apiUrl)
          assert.strictEqual(linked.code, 0, linked.stderr)
          assert.include(linked.stdout, "org-known now mirrors the GitHub account Known-Corp (id 8000000001)")
          assert.deepStrictEqual(yield* organizationRow("org-known"), {
            github_account_id: "8000000001",
            login: "Known-Corp"
          })

          // An installation claiming the login under another id is refused.
          const impostor = yield* installationCreated({ id: 6669, login: "known-corp" }, 66_901)
          assert.deepStrictEqual(impostor.json, { data: { accepted: false, duplicate: false } })
          assert.deepStrictEqual(yield* organizationRow("org-known"), {
            github_account_id: "8000000001",
            login: "Known-Corp"
          })

          yield* configureApp("org-typo")
          const typo = yield* link("org-typo", "no-such-corp", fake.apiUrl)
          assert.strictEqual(typo.code, 1)
          assert.include(typo.stderr, "GitHub has no account with the login no-such-corp")
          assert.deepStrictEqual(yield* organizationRow("org-typo"), { github_account_id: null, login: null })
        })
    )
  }
)
