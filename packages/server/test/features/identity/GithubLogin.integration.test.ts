/**
 * Signing in with GitHub end to end: the real server's login and callback against a
 * local fake GitHub speaking the OAuth and REST wire formats, through the real Octokit clients.
 * Covers the redirect and its state cookie, the code exchange, users and memberships from the
 * App's installations (owners ADMIN, others MEMBER), the session cookie, and every refusal.
 */
import { generateKeyPairSync } from "node:crypto"
import type { Me } from "@bosun/domain"
import { FakeGithub, type FakeGithubUser, LogCapture } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { OrganizationsRepo } from "../../../src/features/identity/OrganizationsRepo.ts"
import { UsersRepo } from "../../../src/features/identity/UsersRepo.ts"
import { layerTestServer, request, TEST_BOOTSTRAP_TOKEN } from "../../support/TestServer.ts"

const PRIVATE_KEY = generateKeyPairSync("rsa", { modulusLength: 2048 })
  .privateKey.export({ type: "pkcs8", format: "pem" })
  .toString()
const APP = { clientId: "Iv1.login-app", clientSecret: "login-client-secret-7e21" }

const Server = Layer.unwrap(
  Effect.map(FakeGithub, (fake) => layerTestServer({ settings: { githubApiUrl: new URL(fake.apiUrl) } }))
).pipe(Layer.provideMerge(FakeGithub.layer))

const configureApp = (organizationId: string, clientId = APP.clientId) =>
  request(`/api/v1/organizations/${organizationId}/github-app`, {
    method: "PUT",
    headers: { authorization: `Bearer ${TEST_BOOTSTRAP_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      client_id: clientId,
      client_secret: APP.clientSecret,
      github_app_id: 77,
      github_app_slug: "bosun-login",
      private_key: PRIVATE_KEY,
      webhook_secret: "login-webhook-secret"
    })
  })

/** The cookies a response sets, by name, with their attribute text. */
const setCookies = (headers: Headers) =>
  Object.fromEntries(
    headers.getSetCookie().map((cookie) => {
      const [pair = ""] = cookie.split(";")
      const eq = pair.indexOf("=")
      return [pair.slice(0, eq), { value: pair.slice(eq + 1), attributes: cookie }]
    })
  )

/** Runs the login redirect and returns the state and the state cookie to send back. */
const startLogin = (query = "") =>
  Effect.gen(function* () {
    const response = yield* request(`/api/v1/auth/github/login${query}`, { redirect: "manual" })
    assert.strictEqual(response.status, 302, response.text)
    const location = new URL(response.headers.get("location") ?? "")
    const state = location.searchParams.get("state") ?? ""
    const cookie = setCookies(response.headers).bosun_oauth_state
    assert.isDefined(cookie)
    return {
      location,
      state,
      cookie: `bosun_oauth_state=${cookie?.value ?? ""}`,
      cookieAttributes: cookie?.attributes ?? ""
    }
  })

const callback = (code: string, state: string, cookie?: string) =>
  request(`/api/v1/auth/github/callback?code=${encodeURIComponent(code)}&state=${encodeURIComponent(state)}`, {
    redirect: "manual",
    headers: cookie === undefined ? {} : { cookie }
  })

const githubUser = (id: number, login: string, overrides: Partial<FakeGithubUser> = {}): FakeGithubUser => ({
  id,
  login,
  name: `${login} name`,
  avatar_url: `https://avatars.example/${id}`,
  installations: [{ id: 5001, account: { id: 9001, login: "acme-gh", type: "Organization" } }],
  orgRoles: {},
  ...overrides
})

const signInAs = (user: FakeGithubUser) =>
  Effect.gen(function* () {
    const fake = yield* FakeGithub
    const { state, cookie } = yield* startLogin("?organization_id=acme-login")
    const response = yield* callback(fake.issueCode(APP.clientId, user), state, cookie)
    assert.strictEqual(response.status, 302, response.text)
    const session = setCookies(response.headers).bosun_session
    return { response, session: `bosun_session=${session?.value ?? ""}`, sessionAttributes: session?.attributes ?? "" }
  })

const me = (cookie: string) =>
  Effect.map(request("/api/v1/me", { headers: { cookie } }), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return (response.json as { data: Me }).data
  })

const errorCode = (json: unknown) => (json as { error: { code: string } }).error.code

layer(Server, { excludeTestServices: true })("GitHub sign-in", (it) => {
  it.effect("answers 503 github_app_unconfigured while no App is configured", () =>
    Effect.gen(function* () {
      const response = yield* request("/api/v1/auth/github/login", { redirect: "manual" })
      assert.strictEqual(response.status, 503)
      assert.strictEqual(errorCode(response.json), "github_app_unconfigured")
    })
  )

  it.effect(
    "redirects to GitHub's authorize URL with the App's client id, the callback and a state kept in a cookie",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeGithub
        assert.strictEqual((yield* configureApp("acme-login")).status, 200)
        fake.addApp(APP)
        // The operator ties the organization to its GitHub account (bosun organizations link).
        const organizations = yield* OrganizationsRepo
        assert.strictEqual(yield* organizations.setGithubAccount("acme-login", { login: "acme-gh", id: null }), "set")
        const { location, state, cookieAttributes } = yield* startLogin()
        assert.strictEqual(`${location.origin}${location.pathname}`, `${fake.url}/login/oauth/authorize`)
        assert.strictEqual(location.searchParams.get("client_id"), APP.clientId)
        assert.strictEqual(location.searchParams.get("redirect_uri"), "http://127.0.0.1:0/api/v1/auth/github/callback")
        assert.match(state, /^[A-Za-z0-9_-]{43}$/)
        assert.include(cookieAttributes, "HttpOnly")
        assert.include(cookieAttributes, "Path=/api/v1/auth/github")
        assert.include(cookieAttributes, "Max-Age=600")
        assert.include(cookieAttributes, "SameSite=Lax")
        const again = yield* startLogin()
        assert.notStrictEqual(again.state, state)
      })
  )

  it.effect("signs an owner of the GitHub organization in as ADMIN and completes the account id of the tie", () =>
    Effect.gen(function* () {
      const fake = yield* FakeGithub
      const sql = yield* SqlClient.SqlClient
      const { response, session, sessionAttributes } = yield* signInAs(
        githubUser(101, "octo-owner", { orgRoles: { "acme-gh": "admin" } })
      )
      assert.strictEqual(response.headers.get("location"), "http://127.0.0.1:0/")
      assert.match(session, /^bosun_session=[A-Za-z0-9_-]{43}$/)
      assert.include(sessionAttributes, "HttpOnly")
      assert.include(sessionAttributes, "SameSite=Lax")
      assert.include(sessionAttributes, "Path=/")
      assert.include(sessionAttributes, "Max-Age=2592000")
      assert.include(setCookies(response.headers).bosun_oauth_state?.attributes ?? "", "Max-Age=0")
      const body = yield* me(session)
      assert.deepStrictEqual(
        {
          login: body.user.login,
          name: body.user.name,
          avatar_url: body.user.avatar_url,
          super_user: body.user.super_user
        },
        { login: "octo-owner", name: "octo-owner name", avatar_url: "https://avatars.example/101", super_user: false }
      )
      assert.deepStrictEqual(body.organizations, [
        { id: "acme-login", name: "acme-login", login: "acme-gh", role: "ADMIN" }
      ])
      const [org] = yield* sql<{ github_account_id: string }>`
        SELECT github_account_id::text AS github_account_id FROM organizations WHERE id = 'acme-login'`
      assert.strictEqual(org?.github_account_id, "9001")
      // The token exchange carried the App's credentials; the REST calls the user's token.
      const exchange = fake.requests.find((r) => r.path === "/login/oauth/access_token")
      assert.include(exchange?.body ?? "", APP.clientId)
      assert.isTrue(
        fake.requests.filter((r) => r.path === "/api/v3/user").every((r) => r.authorization?.startsWith("token ghu_"))
      )
    })
  )

  it.effect("signs a plain member in as MEMBER, and someone without an installation in with no organization", () =>
    Effect.gen(function* () {
      const member = yield* signInAs(githubUser(102, "octo-member", { orgRoles: { "acme-gh": "member" } }))
      assert.deepStrictEqual((yield* me(member.session)).organizations, [
        { id: "acme-login", name: "acme-login", login: "acme-gh", role: "MEMBER" }
      ])
      const outsider = yield* signInAs(githubUser(103, "outsider", { installations: [] }))
      assert.deepStrictEqual((yield* me(outsider.session)).organizations, [])
    })
  )

  it.effect(
    "gives no membership to an outside collaborator who sees the installation, nor for another user's account",
    () =>
      Effect.gen(function* () {
        // GitHub lists the installation (the user can reach one repository) but the user is not a
        // member of the organization: /user/memberships/orgs/acme-gh answers 404.
        const collaborator = yield* signInAs(githubUser(105, "collaborator", { orgRoles: {} }))
        assert.deepStrictEqual((yield* me(collaborator.session)).organizations, [])
        const organizations = yield* OrganizationsRepo
        yield* organizations.ensure("mona-personal")
        yield* organizations.setGithubAccount("mona-personal", { login: "mona", id: null })
        const personal = [{ id: 5002, account: { id: 7777, login: "mona", type: "User" as const } }]
        const visitor = yield* signInAs(githubUser(106, "visitor", { installations: personal }))
        assert.deepStrictEqual((yield* me(visitor.session)).organizations, [])
        const owner = yield* signInAs(githubUser(7777, "mona", { installations: personal }))
        assert.deepStrictEqual((yield* me(owner.session)).organizations, [
          { id: "mona-personal", name: "mona-personal", login: "mona", role: "ADMIN" }
        ])
      })
  )

  it.effect("removes a GitHub-derived membership the user lost, leaving operator-granted ones alone", () =>
    Effect.gen(function* () {
      const users = yield* UsersRepo
      const organizations = yield* OrganizationsRepo
      const first = yield* signInAs(githubUser(107, "leaver", { orgRoles: { "acme-gh": "member" } }))
      assert.strictEqual((yield* me(first.session)).organizations.length, 1)
      const user = yield* users.findByLogin("leaver")
      yield* organizations.ensure("granted-by-operator")
      yield* users.setMembership("granted-by-operator", user._tag === "Some" ? user.value.id : "", "ADMIN")
      const again = yield* signInAs(githubUser(107, "leaver", { orgRoles: {} }))
      const expected = [{ id: "granted-by-operator", name: "granted-by-operator", login: null, role: "ADMIN" as const }]
      assert.deepStrictEqual((yield* me(again.session)).organizations, expected)
      // Access is checked per request: the earlier session lost the organization too.
      assert.deepStrictEqual((yield* me(first.session)).organizations, expected)
    })
  )

  it.effect("never ties an organization to a GitHub account at sign-in", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const fake = yield* FakeGithub
      assert.strictEqual((yield* configureApp("untied-org", "Iv1.untied")).status, 200)
      fake.addApp({ clientId: "Iv1.untied", clientSecret: APP.clientSecret })
      const { state, cookie } = yield* startLogin("?organization_id=untied-org")
      const attacker = githubUser(108, "attacker", {
        installations: [{ id: 6001, account: { id: 108, login: "attacker", type: "User" } }]
      })
      const response = yield* callback(fake.issueCode("Iv1.untied", attacker), state, cookie)
      assert.strictEqual(response.status, 302)
      const [row] = yield* sql<{ login: string | null; github_account_id: string | null }>`
        SELECT login, github_account_id::text AS github_account_id FROM organizations WHERE id = 'untied-org'`
      assert.deepStrictEqual(row, { login: null, github_account_id: null })
      const session = setCookies(response.headers).bosun_session?.value ?? ""
      assert.deepStrictEqual((yield* me(`bosun_session=${session}`)).organizations, [])
    })
  )

  it.effect("updates a returning user from GitHub instead of creating another", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* signInAs(githubUser(104, "renamer", { orgRoles: { "acme-gh": "member" } }))
      const again = yield* signInAs(githubUser(104, "renamed", { name: "New Name", orgRoles: { "acme-gh": "admin" } }))
      const body = yield* me(again.session)
      assert.strictEqual(body.user.login, "renamed")
      assert.strictEqual(body.user.name, "New Name")
      assert.strictEqual(body.organizations[0]?.role, "ADMIN")
      const [count] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM users WHERE github_user_id = 104`
      assert.strictEqual(count?.n, "1")
    })
  )

  describe("refusals", () => {
    it.effect("rejects a callback without the state cookie, or with another state, with 400 and no session", () =>
      Effect.gen(function* () {
        const fake = yield* FakeGithub
        const sql = yield* SqlClient.SqlClient
        const [before] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM sessions`
        const { state, cookie } = yield* startLogin("?organization_id=acme-login")
        const other = yield* startLogin("?organization_id=acme-login")
        for (const [code, sentState, sentCookie] of [
          [fake.issueCode(APP.clientId, githubUser(110, "no-cookie")), state, undefined],
          [fake.issueCode(APP.clientId, githubUser(111, "wrong-state")), other.state, cookie],
          [fake.issueCode(APP.clientId, githubUser(112, "forged-cookie")), state, "bosun_oauth_state=bm90LWpzb24"]
        ] as const) {
          const response = yield* callback(code, sentState, sentCookie)
          assert.strictEqual(response.status, 400)
          assert.strictEqual(errorCode(response.json), "invalid_oauth_state")
          assert.isUndefined(setCookies(response.headers).bosun_session)
        }
        const [after] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM sessions`
        assert.strictEqual(after?.n, before?.n)
      })
    )

    it.effect("answers a code GitHub refuses with 400 invalid_oauth_code", () =>
      Effect.gen(function* () {
        const { state, cookie } = yield* startLogin("?organization_id=acme-login")
        const response = yield* callback("not-a-code-github-issued", state, cookie)
        assert.strictEqual(response.status, 400)
        assert.strictEqual(errorCode(response.json), "invalid_oauth_code")
      })
    )

    it.effect("answers a GitHub outage with 502 github_unavailable, naming no credential", () =>
      Effect.gen(function* () {
        const fake = yield* FakeGithub
        const { state, cookie } = yield* startLogin("?organization_id=acme-login")
        const code = fake.issueCode(APP.clientId, githubUser(120, "during-outage"))
        fake.failWith(503)
        const response = yield* callback(code, state, cookie).pipe(
          Effect.ensuring(Effect.sync(() => fake.failWith(undefined)))
        )
        assert.strictEqual(response.status, 502)
        assert.strictEqual(errorCode(response.json), "github_unavailable")
        assert.notInclude(response.text, APP.clientSecret)
        assert.notInclude(response.text, "ghu_")
      })
    )

    it.effect("asks for organization_id when several Apps are configured, also when the one named has none", () =>
      Effect.gen(function* () {
        assert.strictEqual((yield* configureApp("second-org", "Iv1.second")).status, 200)
        const ambiguous = yield* request("/api/v1/auth/github/login", { redirect: "manual" })
        assert.strictEqual(ambiguous.status, 400)
        assert.strictEqual(errorCode(ambiguous.json), "organization_required")
        const unconfigured = yield* request("/api/v1/auth/github/login?organization_id=no-app-org", {
          redirect: "manual"
        })
        assert.strictEqual(unconfigured.status, 400)
        assert.strictEqual(errorCode(unconfigured.json), "organization_required")
        const chosen = yield* startLogin("?organization_id=second-org")
        assert.strictEqual(chosen.location.searchParams.get("client_id"), "Iv1.second")
      })
    )

    it.effect("never logs the App's client secret, a GitHub token, a code or a session cookie", () =>
      Effect.gen(function* () {
        const capture = yield* LogCapture
        const fake = yield* FakeGithub
        const { session } = yield* signInAs(githubUser(130, "quiet", { orgRoles: { "acme-gh": "member" } }))
        const text = capture.lines.join("\n")
        assert.notInclude(text, APP.clientSecret)
        assert.notInclude(text, "ghu_")
        assert.notInclude(text, session.slice("bosun_session=".length))
        const codes = fake.requests
          .filter((r) => r.path === "/login/oauth/access_token")
          .map((r) => (JSON.parse(r.body) as { code: string }).code)
        assert.isAbove(codes.length, 0)
        for (const code of codes) assert.notInclude(text, code)
        assert.isAbove(capture.lines.length, 0)
      })
    )
  })
})
