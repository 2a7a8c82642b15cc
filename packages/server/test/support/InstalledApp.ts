/**
 * A test server whose GitHub is the fake (`FakeGithub`), and organizations set up on it as a real
 * installation would be: the App with a real RSA key registered with the fake, installed on one
 * repository, which the `installation` delivery brings. Shared by the review-queueing and
 * `@slug` command tests.
 */
import { generateKeyPairSync } from "node:crypto"
import { FakeGithub } from "@bosun/testing"
import { assert } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { OrganizationsRepo } from "../../src/features/identity/OrganizationsRepo.ts"
import { GithubAppsRepo } from "../../src/outbound/github/GithubAppsRepo.ts"
import { APP_ID, deliver, processed, SECRET } from "./GithubDeliveries.ts"
import { layerTestServer } from "./TestServer.ts"

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })

/** The test server pointed at the fake GitHub, which is provided alongside. */
export const layerServerWithFakeGithub = Layer.unwrap(
  Effect.map(FakeGithub, (fake) => layerTestServer({ settings: { githubApiUrl: new URL(fake.apiUrl) } }))
).pipe(Layer.provideMerge(FakeGithub.layer))

/** One organization of a test: its GitHub account, the App's installation and its one repository. */
export interface Tenant {
  readonly org: string
  readonly account: { readonly id: number; readonly login: string }
  readonly installationId: number
  readonly githubRepositoryId: number
  /** `owner/name` on GitHub. */
  readonly fullName: string
}

/** Signed deliveries whose ids start with `prefix`. */
export const deliveries = (prefix: string) => {
  let sent = 0
  /** Sends a signed delivery; answers its id and the route's `{accepted, duplicate}`. */
  const send = (event: string, body: string, id = `${prefix}-${sent++}`) =>
    Effect.map(deliver({ id, event, body }), (response) => {
      assert.strictEqual(response.status, 202, response.text)
      return { id, answer: (response.json as { data: { accepted: boolean; duplicate: boolean } }).data }
    })
  /** Sends a delivery GitHub has not sent before; answers its id. */
  const sendNew = (event: string, body: string) =>
    Effect.map(send(event, body), ({ id, answer }) => {
      assert.deepStrictEqual(answer, { accepted: true, duplicate: false })
      return id
    })
  return { send, sendNew }
}

/**
 * The organization linked to the tenant's account with the App (`slug`, `clientId`) installed on
 * the tenant's repository; an `installation` created delivery brings the repository. Answers the
 * repository's id.
 */
export const installApp = <R>(
  t: Tenant,
  app: { readonly slug: string; readonly clientId: string },
  sendNew: (event: string, body: string) => Effect.Effect<string, never, R>
) =>
  Effect.gen(function* () {
    const fake = yield* FakeGithub
    const sql = yield* SqlClient.SqlClient
    fake.addApp({
      clientId: app.clientId,
      clientSecret: `${app.clientId}-secret`,
      appId: APP_ID,
      publicKey: publicKey.export({ type: "spki", format: "pem" }).toString(),
      slug: app.slug
    })
    const account = { ...t.account, type: "Organization" } as const
    fake.addInstallation({ id: t.installationId, appId: APP_ID, account, repositories: [t.fullName] })
    yield* (yield* OrganizationsRepo).ensure(t.org)
    // Linked up front: every organization here shares the App, and a delivery goes to the one
    // mirroring its account (an unlinked organization would take any account's deliveries).
    yield* sql`UPDATE organizations SET github_account_id = ${t.account.id} WHERE id = ${t.org}`
    yield* (yield* GithubAppsRepo).upsert(t.org, {
      githubAppId: APP_ID,
      slug: app.slug,
      clientId: app.clientId,
      clientSecret: Redacted.make(`${app.clientId}-secret`),
      privateKey: Redacted.make(privateKey.export({ type: "pkcs8", format: "pem" }).toString()),
      webhookSecret: Redacted.make(SECRET)
    })
    const installed = yield* sendNew(
      "installation",
      JSON.stringify({
        action: "created",
        installation: { id: t.installationId, account, app_id: APP_ID, target_type: "Organization" },
        repositories: [
          { id: t.githubRepositoryId, name: t.fullName.split("/")[1], full_name: t.fullName, private: true }
        ],
        sender: { id: 1, login: "octocat" }
      })
    )
    assert.isNull(yield* processed(installed))
    const [repository] = yield* sql<{ id: string }>`
      SELECT id FROM repositories WHERE organization_id = ${t.org} AND github_repository_id = ${t.githubRepositoryId}`
    assert.isDefined(repository)
    return repository?.id ?? ""
  })
