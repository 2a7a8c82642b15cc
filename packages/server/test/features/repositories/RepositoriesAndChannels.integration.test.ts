/**
 * Repositories and chat channels of an organization over real HTTP
 * (docs/interface.md: Organization endpoints; Resources "Repository", "Chat channel";
 * Authentication 1-3): success shapes field by field, 401 without a session, 404 across
 * organizations and for non-members, 403 below ADMIN for writes, 400 for bad input, and audit
 * evidence for each write.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { ChatChannelsRepo } from "../../../src/features/workItems/ChatChannelsRepo.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

const json = (cookie: string, method: string, body: unknown) => ({
  method,
  headers: { cookie, "content-type": "application/json" },
  body: JSON.stringify(body)
})

/** Two organizations with a repository and a channel each, an admin and a member of A, an admin of B. */
const fixture = Effect.gen(function* () {
  const repositories = yield* RepositoriesRepo
  const channels = yield* ChatChannelsRepo
  const adminA = yield* signIn("admin-a", [["org-a", "ADMIN"]])
  const memberA = yield* signIn("member-a", [["org-a", "MEMBER"]])
  const adminB = yield* signIn("admin-b", [["org-b", "ADMIN"]])
  const repoA2 = yield* repositories.upsert("org-a", {
    githubRepositoryId: 12,
    owner: "acme",
    name: "zeta",
    defaultBranch: "trunk"
  })
  const repoA = yield* repositories.upsert("org-a", {
    githubRepositoryId: 11,
    owner: "acme",
    name: "api",
    defaultBranch: "main"
  })
  const repoB = yield* repositories.upsert("org-b", {
    githubRepositoryId: 21,
    owner: "beta",
    name: "web",
    defaultBranch: "main"
  })
  const channelA = yield* channels.upsert("org-a", { id: "C0A", name: "reviews", isPrivate: false })
  const channelB = yield* channels.upsert("org-b", { id: "C0B", name: "secret", isPrivate: true })
  return { adminA, memberA, adminB, repoA, repoA2, repoB, channelA, channelB }
})

const auditCount = (action: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: string }>`SELECT count(*)::text AS n FROM audit_events WHERE action = ${action}`.pipe(
      Effect.map((rows) => Number(rows[0]?.n ?? 0))
    )
  )

layer(layerTestServer(), { excludeTestServices: true })("organization repositories and channels", (it) => {
  describe("repositories", () => {
    it.effect("lists the organization's repositories, field by field, in owner/name order", () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const response = yield* request("/api/v1/organizations/org-a/repositories", {
          headers: { cookie: f.memberA.cookie }
        })
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(response.json, {
          data: [
            {
              available: true,
              default_branch: "main",
              enabled: true,
              id: f.repoA.id,
              name: "api",
              owner: "acme",
              readiness_status: "NOT_RUN"
            },
            {
              available: true,
              default_branch: "trunk",
              enabled: true,
              id: f.repoA2.id,
              name: "zeta",
              owner: "acme",
              readiness_status: "NOT_RUN"
            }
          ]
        })
      })
    )

    it.effect("pauses and re-enables reviews for an ADMIN, recording each as audit evidence", () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const path = `/api/v1/organizations/org-a/repositories/${f.repoA.id}`
        const paused = yield* request(path, json(f.adminA.cookie, "PATCH", { enabled: false }))
        assert.strictEqual(paused.status, 200)
        assert.deepStrictEqual(paused.json, { data: { ...f.repoA, enabled: false } })
        const read = yield* request(path, { headers: { cookie: f.memberA.cookie } })
        assert.deepStrictEqual(read.json, { data: { ...f.repoA, enabled: false } })
        const enabled = yield* request(path, json(f.adminA.cookie, "PATCH", { enabled: true }))
        assert.deepStrictEqual(enabled.json, { data: { ...f.repoA, enabled: true } })
        assert.isAtLeast(yield* auditCount("repository.pause"), 1)
        assert.isAtLeast(yield* auditCount("repository.enable"), 1)
      })
    )

    it.effect("answers 401 without a session, for reads and writes", () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const list = yield* request("/api/v1/organizations/org-a/repositories")
        assert.strictEqual(list.status, 401)
        const patch = yield* request(`/api/v1/organizations/org-a/repositories/${f.repoA.id}`, {
          method: "PATCH",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ enabled: false })
        })
        assert.strictEqual(patch.status, 401)
        assert.strictEqual(errorCode(patch.json), "session_required")
      })
    )

    it.effect("answers 404 for another organization's repository and for an organization the caller is not in", () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const cases = [
          request(`/api/v1/organizations/org-a/repositories/${f.repoB.id}`, { headers: { cookie: f.adminA.cookie } }),
          request(`/api/v1/organizations/org-b/repositories/${f.repoB.id}`, { headers: { cookie: f.adminA.cookie } }),
          request("/api/v1/organizations/org-b/repositories", { headers: { cookie: f.adminA.cookie } }),
          request("/api/v1/organizations/org-missing/repositories", { headers: { cookie: f.adminA.cookie } }),
          request(
            `/api/v1/organizations/org-a/repositories/${f.repoB.id}`,
            json(f.adminA.cookie, "PATCH", { enabled: false })
          ),
          request(
            `/api/v1/organizations/org-b/repositories/${f.repoB.id}`,
            json(f.adminA.cookie, "PATCH", { enabled: false })
          )
        ]
        for (const call of cases) {
          const response = yield* call
          assert.strictEqual(response.status, 404, response.text)
          assert.strictEqual(errorCode(response.json), "not_found")
        }
        const untouched = yield* request(`/api/v1/organizations/org-b/repositories/${f.repoB.id}`, {
          headers: { cookie: f.adminB.cookie }
        })
        assert.deepStrictEqual(untouched.json, { data: f.repoB })
      })
    )

    it.effect("answers 403 to a MEMBER who tries to pause reviews, changing nothing", () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const path = `/api/v1/organizations/org-a/repositories/${f.repoA2.id}`
        const response = yield* request(path, json(f.memberA.cookie, "PATCH", { enabled: false }))
        assert.strictEqual(response.status, 403)
        assert.strictEqual(errorCode(response.json), "forbidden")
        const read = yield* request(path, { headers: { cookie: f.memberA.cookie } })
        assert.strictEqual((read.json as { data: { enabled: boolean } }).data.enabled, true)
      })
    )

    it.effect("answers 400 for a body without a boolean enabled and for a 129-character id", () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const path = `/api/v1/organizations/org-a/repositories/${f.repoA.id}`
        for (const body of [{}, { enabled: "no" }, { enabled: null }]) {
          const response = yield* request(path, json(f.adminA.cookie, "PATCH", body))
          assert.strictEqual(response.status, 400, JSON.stringify(body))
          assert.strictEqual(errorCode(response.json), "invalid_body")
        }
        const long = yield* request(`/api/v1/organizations/org-a/repositories/${"r".repeat(129)}`, {
          headers: { cookie: f.adminA.cookie }
        })
        assert.strictEqual(long.status, 400)
        assert.strictEqual(errorCode(long.json), "invalid_path_parameter")
      })
    )
  })

  describe("chat channels", () => {
    it.effect("lists the organization's channels and lets an ADMIN turn passive listening on and off", () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const list = yield* request("/api/v1/organizations/org-a/slack/channels", {
          headers: { cookie: f.memberA.cookie }
        })
        assert.deepStrictEqual(list.json, {
          data: [{ id: "C0A", is_private: false, name: "reviews", passive_enabled: false }]
        })
        const path = "/api/v1/organizations/org-a/slack/channels/C0A/passive-listening"
        const on = yield* request(path, json(f.adminA.cookie, "PUT", { enabled: true }))
        assert.strictEqual(on.status, 200)
        assert.deepStrictEqual(on.json, {
          data: { id: "C0A", is_private: false, name: "reviews", passive_enabled: true }
        })
        const off = yield* request(path, json(f.adminA.cookie, "PUT", { enabled: false }))
        assert.deepStrictEqual(off.json, {
          data: { id: "C0A", is_private: false, name: "reviews", passive_enabled: false }
        })
        assert.isAtLeast(yield* auditCount("chat_channel.passive_on"), 1)
      })
    )

    it.effect("answers 401, 404 across organizations, 403 for a MEMBER, and 400 for bad input", () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const path = (org: string, channel: string) =>
          `/api/v1/organizations/${org}/slack/channels/${channel}/passive-listening`
        const anonymous = yield* request(path("org-a", "C0A"), {
          method: "PUT",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ enabled: true })
        })
        assert.strictEqual(anonymous.status, 401)
        for (const [org, channel] of [
          ["org-a", "C0B"],
          ["org-b", "C0B"],
          ["org-a", "C-unknown"]
        ] as const) {
          const response = yield* request(path(org, channel), json(f.adminA.cookie, "PUT", { enabled: true }))
          assert.strictEqual(response.status, 404, `${org}/${channel}`)
        }
        const member = yield* request(path("org-a", "C0A"), json(f.memberA.cookie, "PUT", { enabled: true }))
        assert.strictEqual(member.status, 403)
        const badBody = yield* request(path("org-a", "C0A"), json(f.adminA.cookie, "PUT", { enabled: 1 }))
        assert.strictEqual(badBody.status, 400)
        assert.strictEqual(errorCode(badBody.json), "invalid_body")
        const longId = yield* request(path("org-a", "C".repeat(256)), json(f.adminA.cookie, "PUT", { enabled: true }))
        assert.strictEqual(longId.status, 400)
        assert.strictEqual(errorCode(longId.json), "invalid_path_parameter")
        const maxId = yield* request(path("org-a", "C".repeat(255)), json(f.adminA.cookie, "PUT", { enabled: true }))
        assert.strictEqual(maxId.status, 404)
        const channelB = yield* request("/api/v1/organizations/org-b/slack/channels", {
          headers: { cookie: f.adminB.cookie }
        })
        assert.deepStrictEqual(channelB.json, {
          data: [{ id: "C0B", is_private: true, name: "secret", passive_enabled: false }]
        })
      })
    )
  })
})
