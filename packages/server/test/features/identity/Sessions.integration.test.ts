/**
 * Sessions and the caller's identity over real HTTP and a real database
 * (docs/interface.md: Authentication 1-3, 8; Design rules): `GET /api/v1/me`,
 * `POST /api/v1/auth/logout`, the cookie's attributes, sliding and absolute expiry, CSRF on writes,
 * tokens stored only hashed, the log line's user id, and organization access (404 for non-members,
 * 403 below the needed role).
 */
import { createHash } from "node:crypto"
import { CurrentUser, type Me } from "@bosun/domain"
import { LogCapture } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { OrgAccess } from "../../../src/features/identity/OrgAccess.ts"
import { SessionsRepo } from "../../../src/features/identity/SessionsRepo.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, logsNamed, request } from "../../support/TestServer.ts"

const me = (cookie?: string) => request("/api/v1/me", cookie === undefined ? {} : { headers: { cookie } })

layer(layerTestServer(), { excludeTestServices: true })("sessions", (it) => {
  describe("GET /api/v1/me", () => {
    it.effect("answers 401 session_required without a cookie, with an unknown token, and with an empty one", () =>
      Effect.gen(function* () {
        for (const cookie of [undefined, "bosun_session=not-a-session", "bosun_session=", "other=1"]) {
          const response = yield* me(cookie)
          assert.strictEqual(response.status, 401, String(cookie))
          assert.strictEqual(errorCode(response.json), "session_required")
        }
      })
    )

    it.effect("returns the user and each organization with the caller's role, field by field", () =>
      Effect.gen(function* () {
        const { userId, cookie } = yield* signIn("Mona", [
          ["org-me-b", "MEMBER"],
          ["org-me-a", "ADMIN"]
        ])
        yield* signIn("someone-else", [["org-me-hidden", "ADMIN"]])
        const response = yield* me(cookie)
        assert.strictEqual(response.status, 200)
        const body = response.json as { data: Me }
        assert.deepStrictEqual(Object.keys(body), ["data"])
        assert.deepStrictEqual(body.data.user, {
          id: userId,
          login: "Mona",
          name: null,
          avatar_url: null,
          super_user: false
        })
        assert.deepStrictEqual(body.data.organizations, [
          { id: "org-me-a", name: "org-me-a", login: null, role: "ADMIN" },
          { id: "org-me-b", name: "org-me-b", login: null, role: "MEMBER" }
        ])
      })
    )

    it.effect("shows a SUPER_USER every organization with the role SUPER_USER", () =>
      Effect.gen(function* () {
        yield* signIn("plain-member", [["org-su-1", "MEMBER"]])
        const { cookie } = yield* signIn("operator-1", [], true)
        const body = (yield* me(cookie)).json as { data: Me }
        assert.isTrue(body.data.user.super_user)
        assert.isAtLeast(body.data.organizations.length, 1)
        assert.isTrue(body.data.organizations.every((org) => org.role === "SUPER_USER"))
        assert.isTrue(body.data.organizations.some((org) => org.id === "org-su-1"))
      })
    )

    it.effect("puts the user's opaque id on the request's log line and never the cookie", () =>
      Effect.gen(function* () {
        const capture = yield* LogCapture
        yield* capture.clear
        const { userId, token, cookie } = yield* signIn("logged-user", [["org-log", "MEMBER"]])
        assert.strictEqual((yield* me(cookie)).status, 200)
        const [line] = yield* logsNamed("http_request")
        assert.strictEqual(line?.route, "/api/v1/me")
        assert.strictEqual(line?.user_id, userId)
        assert.notInclude(capture.lines.join("\n"), token)
      })
    )
  })

  describe("the session token", () => {
    it.effect("is 256 random bits, stored only as its SHA-256", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { sessionId, token } = yield* signIn("hashed", [])
        assert.strictEqual(Buffer.from(token, "base64url").length, 32)
        const [row] = yield* sql<{ token_hash: string }>`SELECT token_hash FROM sessions WHERE id = ${sessionId}`
        assert.strictEqual(row?.token_hash, createHash("sha256").update(token).digest("hex"))
        const [leak] = yield* sql<{ n: string }>`
          SELECT count(*)::text AS n FROM sessions WHERE strpos(sessions::text, ${token}) > 0`
        assert.strictEqual(leak?.n, "0")
      })
    )

    it.effect("expires when idle past its expiry or past its absolute age; use pushes the idle expiry", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const idle = yield* signIn("idle-user", [])
        yield* sql`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = ${idle.sessionId}`
        assert.strictEqual((yield* me(idle.cookie)).status, 401)

        const old = yield* signIn("old-user", [])
        yield* sql`UPDATE sessions SET absolute_expires_at = now() - interval '1 second' WHERE id = ${old.sessionId}`
        assert.strictEqual((yield* me(old.cookie)).status, 401)

        const active = yield* signIn("active-user", [])
        yield* sql`UPDATE sessions SET last_seen_at = now() - interval '2 hours',
                     expires_at = now() + interval '1 hour' WHERE id = ${active.sessionId}`
        assert.strictEqual((yield* me(active.cookie)).status, 200)
        const [row] = yield* sql<{ pushed: boolean; seen: boolean }>`
          SELECT expires_at > now() + interval '13 days' AS pushed,
                 last_seen_at > now() - interval '1 minute' AS seen
          FROM sessions WHERE id = ${active.sessionId}`
        assert.deepStrictEqual(row, { pushed: true, seen: true })
      })
    )
  })

  describe("POST /api/v1/auth/logout", () => {
    it.effect("revokes this session only, answers 204 and expires the cookie", () =>
      Effect.gen(function* () {
        const first = yield* signIn("leaving", [])
        const sessions = yield* SessionsRepo
        const userId = first.userId
        const second = yield* sessions.create(userId)
        const response = yield* request("/api/v1/auth/logout", { method: "POST", headers: { cookie: first.cookie } })
        assert.strictEqual(response.status, 204)
        assert.strictEqual(response.text, "")
        const cookie = response.headers.get("set-cookie") ?? ""
        assert.match(cookie, /^bosun_session=;/)
        assert.include(cookie, "Max-Age=0")
        assert.include(cookie, "HttpOnly")
        assert.include(cookie, "SameSite=Lax")
        assert.include(cookie, "Path=/")
        assert.strictEqual((yield* me(first.cookie)).status, 401)
        assert.strictEqual((yield* me(`bosun_session=${Redacted.value(second.token)}`)).status, 200)
      })
    )

    it.effect("refuses a write from another origin with 403 origin_mismatch and keeps the session", () =>
      Effect.gen(function* () {
        const { cookie } = yield* signIn("csrf-target", [])
        const foreign = yield* request("/api/v1/auth/logout", {
          method: "POST",
          headers: { cookie, origin: "https://evil.example" }
        })
        assert.strictEqual(foreign.status, 403)
        assert.strictEqual(errorCode(foreign.json), "origin_mismatch")
        assert.strictEqual((yield* me(cookie)).status, 200)
        const same = yield* request("/api/v1/auth/logout", {
          method: "POST",
          headers: { cookie, origin: "http://127.0.0.1:0" }
        })
        assert.strictEqual(same.status, 204)
      })
    )
  })

  describe("organization access", () => {
    const asUser = (userId: string) => (effect: Effect.Effect<unknown, unknown, CurrentUser>) =>
      Effect.provideService(effect, CurrentUser, { userId, login: "x", superUser: false, sessionId: "s" })

    it.effect("gives a member their role, and 404 for another organization or a missing one", () =>
      Effect.gen(function* () {
        const access = yield* OrgAccess
        const a = yield* signIn("member-a", [["org-access-a", "MEMBER"]])
        yield* signIn("member-b", [["org-access-b", "ADMIN"]])
        const role = yield* asUser(a.userId)(access.member("org-access-a"))
        assert.strictEqual(role, "MEMBER")
        for (const org of ["org-access-b", "org-does-not-exist"]) {
          const error = yield* Effect.flip(asUser(a.userId)(access.member(org)))
          assert.deepStrictEqual(error, yield* Effect.flip(asUser(a.userId)(access.member("org-does-not-exist"))))
          assert.strictEqual((error as { _tag: string })._tag, "NotFound")
        }
      })
    )

    it.effect("is 403 below the needed role; a SUPER_USER passes everywhere that exists", () =>
      Effect.gen(function* () {
        const access = yield* OrgAccess
        const member = yield* signIn("member-role", [["org-roles", "MEMBER"]])
        const forbidden = yield* Effect.flip(asUser(member.userId)(access.require("org-roles", "ADMIN")))
        assert.strictEqual((forbidden as { _tag: string })._tag, "Forbidden")
        const admin = yield* signIn("admin-role", [["org-roles", "ADMIN"]])
        assert.strictEqual(yield* asUser(admin.userId)(access.require("org-roles", "ADMIN")), "ADMIN")
        const operator = yield* signIn("operator-role", [], true)
        assert.strictEqual(yield* asUser(operator.userId)(access.require("org-roles", "ADMIN")), "SUPER_USER")
        const missing = yield* Effect.flip(asUser(operator.userId)(access.member("org-nowhere")))
        assert.strictEqual((missing as { _tag: string })._tag, "NotFound")
      })
    )
  })

  it.effect("finds no user for a revoked or unknown token at the repository too", () =>
    Effect.gen(function* () {
      const sessions = yield* SessionsRepo
      const { sessionId, token } = yield* signIn("repo-user", [])
      assert.isTrue(Option.isSome(yield* sessions.authenticate(Redacted.make(token))))
      yield* sessions.revoke(sessionId)
      assert.isTrue(Option.isNone(yield* sessions.authenticate(Redacted.make(token))))
      assert.isTrue(Option.isNone(yield* sessions.authenticate(Redacted.make("x".repeat(300)))))
    })
  )
})
