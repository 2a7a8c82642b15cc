/**
 * Memories over real HTTP (spec: Organization endpoints, Resources "Memory"; issue 5): the list,
 * one memory by id and the enable/disable PATCH, field by field; 409 for a memory that is not
 * approved; 401, 404 across organizations, 403 below ADMIN, 400 for bad input; last_toggled_at/by
 * and audit evidence.
 */
import type { Memory } from "@bosun/domain"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { MemoriesRepo } from "../../src/persistence/MemoriesRepo.ts"
import { RepositoriesRepo } from "../../src/persistence/RepositoriesRepo.ts"
import { errorCode, signIn } from "../support/Identity.ts"
import { layerTestServer, request } from "../support/TestServer.ts"

const patch = (cookie: string, path: string, body: unknown) =>
  request(path, {
    method: "PATCH",
    headers: { cookie, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

const fixture = Effect.gen(function* () {
  const repositories = yield* RepositoriesRepo
  const memories = yield* MemoriesRepo
  const admin = yield* signIn("mem-admin", [["mem-org", "ADMIN"]])
  const member = yield* signIn("mem-member", [["mem-org", "MEMBER"]])
  const outsider = yield* signIn("mem-outsider", [["mem-other", "ADMIN"]])
  const repository = yield* repositories.upsert("mem-org", {
    githubRepositoryId: 1,
    owner: "acme",
    name: "service",
    defaultBranch: "main"
  })
  const proposed = yield* memories.propose("mem-org", {
    repositoryId: repository.id,
    convention: "Use Effect.fn for service methods",
    purpose: "traceable spans",
    rationale: "reviewers kept asking",
    proposedBy: member.userId,
    sourceType: "REVIEW_FEEDBACK",
    sourceUrl: "https://github.example/acme/service/pull/7#discussion_r1",
    metadata: { file_path: "src/A.ts", language: "typescript", pull_request_number: 7, source_comment_id: 1 }
  })
  const approved = yield* memories.propose("mem-org", { repositoryId: null, convention: "No default exports" })
  yield* memories.decide("mem-org", approved.id, true, admin.userId)
  const foreign = yield* memories.propose("mem-other", { repositoryId: null, convention: "Other org's memory" })
  return { admin, member, outsider, repository, proposed, approved, foreign }
})

layer(layerTestServer(), { excludeTestServices: true })("memories", (it) => {
  it.effect("lists memories with every field of the spec's resource", () =>
    Effect.gen(function* () {
      const f = yield* fixture
      const response = yield* request("/api/v1/organizations/mem-org/memories", {
        headers: { cookie: f.member.cookie }
      })
      assert.strictEqual(response.status, 200)
      const data = (response.json as { data: ReadonlyArray<Memory> }).data
      const proposed = data.find((m) => m.id === f.proposed.id)
      assert.isDefined(proposed)
      assert.deepStrictEqual(Object.keys(proposed ?? {}).sort(), [
        "approved_at",
        "approved_by",
        "approved_by_login",
        "convention",
        "created_at",
        "enabled",
        "id",
        "last_toggled_at",
        "last_toggled_by",
        "last_toggled_by_login",
        "lifecycle",
        "metadata",
        "organization_id",
        "proposed_by",
        "proposed_by_login",
        "purpose",
        "rationale",
        "repository_id",
        "repository_name",
        "repository_owner",
        "scope",
        "source_actor",
        "source_finding_id",
        "source_run_id",
        "source_type",
        "source_url",
        "updated_at"
      ])
      assert.deepStrictEqual(
        { ...proposed, created_at: "t", updated_at: "t" },
        {
          approved_at: null,
          approved_by: null,
          approved_by_login: null,
          convention: "Use Effect.fn for service methods",
          created_at: "t",
          enabled: false,
          id: f.proposed.id,
          last_toggled_at: null,
          last_toggled_by: null,
          last_toggled_by_login: null,
          lifecycle: "PROPOSED",
          metadata: { file_path: "src/A.ts", language: "typescript", pull_request_number: 7, source_comment_id: 1 },
          organization_id: "mem-org",
          proposed_by: f.member.userId,
          proposed_by_login: "mem-member",
          purpose: "traceable spans",
          rationale: "reviewers kept asking",
          repository_id: f.repository.id,
          repository_name: "service",
          repository_owner: "acme",
          scope: "REPOSITORY",
          source_actor: null,
          source_finding_id: null,
          source_run_id: null,
          source_type: "REVIEW_FEEDBACK",
          source_url: "https://github.example/acme/service/pull/7#discussion_r1",
          updated_at: "t"
        }
      )
      assert.isFalse(Number.isNaN(Date.parse(proposed?.created_at ?? "")))
      assert.isFalse(data.some((m) => m.id === f.foreign.id))
    })
  )

  it.effect("enables and disables an approved memory, recording who toggled it and when", () =>
    Effect.gen(function* () {
      const f = yield* fixture
      const sql = yield* SqlClient.SqlClient
      const path = `/api/v1/organizations/mem-org/memories/${f.approved.id}`
      const on = yield* patch(f.admin.cookie, path, { enabled: true })
      assert.strictEqual(on.status, 200)
      const memory = (on.json as { data: Memory }).data
      assert.strictEqual(memory.enabled, true)
      assert.strictEqual(memory.lifecycle, "APPROVED")
      assert.strictEqual(memory.scope, "ORGANIZATION")
      // Recorded without metadata: every key of the spec's metadata is there, null.
      assert.deepStrictEqual(memory.metadata, {
        file_path: null,
        language: null,
        pull_request_number: null,
        source_comment_id: null
      })
      assert.strictEqual(memory.last_toggled_by, f.admin.userId)
      assert.strictEqual(memory.last_toggled_by_login, "mem-admin")
      assert.strictEqual(memory.approved_by_login, "mem-admin")
      assert.isTrue(Date.now() - Date.parse(memory.last_toggled_at ?? "") < 60_000)
      const off = yield* patch(f.admin.cookie, path, { enabled: false })
      assert.strictEqual((off.json as { data: Memory }).data.enabled, false)
      const [audit] = yield* sql<{ n: string }>`
        SELECT count(*)::text AS n FROM audit_events WHERE target = ${`memory:${f.approved.id}`}`
      assert.strictEqual(audit?.n, "2")
    })
  )

  it.effect("answers 409 memory_not_approved for a proposed memory, changing nothing", () =>
    Effect.gen(function* () {
      const f = yield* fixture
      const response = yield* patch(f.admin.cookie, `/api/v1/organizations/mem-org/memories/${f.proposed.id}`, {
        enabled: true
      })
      assert.strictEqual(response.status, 409)
      assert.strictEqual(errorCode(response.json), "memory_not_approved")
      const memories = yield* MemoriesRepo
      const unchanged = yield* memories.find("mem-org", f.proposed.id)
      assert.strictEqual(unchanged._tag === "Some" ? unchanged.value.enabled : undefined, false)
    })
  )

  it.effect("answers 401 without a session, 404 across organizations, 403 for a MEMBER, 400 for bad input", () =>
    Effect.gen(function* () {
      const f = yield* fixture
      const path = `/api/v1/organizations/mem-org/memories/${f.approved.id}`
      const anonymous = yield* request(path, {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ enabled: true })
      })
      assert.strictEqual(anonymous.status, 401)
      for (const [cookie, target] of [
        [f.admin.cookie, `/api/v1/organizations/mem-org/memories/${f.foreign.id}`],
        [f.admin.cookie, `/api/v1/organizations/mem-other/memories/${f.foreign.id}`],
        [f.outsider.cookie, path],
        [f.admin.cookie, "/api/v1/organizations/mem-org/memories/no-such-memory"]
      ] as const) {
        const response = yield* patch(cookie, target, { enabled: true })
        assert.strictEqual(response.status, 404, target)
        assert.strictEqual(errorCode(response.json), "not_found")
      }
      const list = yield* request("/api/v1/organizations/mem-org/memories", { headers: { cookie: f.outsider.cookie } })
      assert.strictEqual(list.status, 404)
      const member = yield* patch(f.member.cookie, path, { enabled: true })
      assert.strictEqual(member.status, 403)
      for (const body of [{}, { enabled: "yes" }]) {
        const bad = yield* patch(f.admin.cookie, path, body)
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(errorCode(bad.json), "invalid_body")
      }
      const long = yield* patch(f.admin.cookie, `/api/v1/organizations/mem-org/memories/${"m".repeat(129)}`, {
        enabled: true
      })
      assert.strictEqual(long.status, 400)
      assert.strictEqual(errorCode(long.json), "invalid_path_parameter")
    })
  )

  it.effect("reads one memory by id with every field of the spec's resource, as the list shows it", () =>
    Effect.gen(function* () {
      const f = yield* fixture
      const response = yield* request(`/api/v1/organizations/mem-org/memories/${f.proposed.id}`, {
        headers: { cookie: f.member.cookie }
      })
      assert.strictEqual(response.status, 200, response.text)
      const body = response.json as { data: Memory }
      assert.deepStrictEqual(Object.keys(body), ["data"])
      assert.deepStrictEqual(
        { ...body.data, created_at: "t", updated_at: "t" },
        {
          approved_at: null,
          approved_by: null,
          approved_by_login: null,
          convention: "Use Effect.fn for service methods",
          created_at: "t",
          enabled: false,
          id: f.proposed.id,
          last_toggled_at: null,
          last_toggled_by: null,
          last_toggled_by_login: null,
          lifecycle: "PROPOSED",
          metadata: { file_path: "src/A.ts", language: "typescript", pull_request_number: 7, source_comment_id: 1 },
          organization_id: "mem-org",
          proposed_by: f.member.userId,
          proposed_by_login: "mem-member",
          purpose: "traceable spans",
          rationale: "reviewers kept asking",
          repository_id: f.repository.id,
          repository_name: "service",
          repository_owner: "acme",
          scope: "REPOSITORY",
          source_actor: null,
          source_finding_id: null,
          source_run_id: null,
          source_type: "REVIEW_FEEDBACK",
          source_url: "https://github.example/acme/service/pull/7#discussion_r1",
          updated_at: "t"
        }
      )
      assert.deepStrictEqual(body.data, f.proposed)
      const approved = yield* request(`/api/v1/organizations/mem-org/memories/${f.approved.id}`, {
        headers: { cookie: f.member.cookie }
      })
      const list = yield* request("/api/v1/organizations/mem-org/memories", { headers: { cookie: f.member.cookie } })
      assert.deepStrictEqual(
        (approved.json as { data: Memory }).data,
        (list.json as { data: ReadonlyArray<Memory> }).data.find((m) => m.id === f.approved.id)
      )
      assert.strictEqual((approved.json as { data: Memory }).data.approved_by_login, "mem-admin")
    })
  )

  it.effect(
    "reading one memory answers 401 without a session, 404 to a stranger and for another organization's memory or an unknown id, 400 for a 129-character id",
    () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const path = `/api/v1/organizations/mem-org/memories/${f.approved.id}`
        const anonymous = yield* request(path)
        assert.strictEqual(anonymous.status, 401)
        assert.strictEqual(errorCode(anonymous.json), "session_required")
        for (const [cookie, target] of [
          [f.outsider.cookie, path],
          [f.member.cookie, `/api/v1/organizations/mem-org/memories/${f.foreign.id}`],
          [f.member.cookie, `/api/v1/organizations/mem-other/memories/${f.foreign.id}`],
          [f.member.cookie, "/api/v1/organizations/mem-org/memories/no-such-memory"]
        ] as const) {
          const response = yield* request(target, { headers: { cookie } })
          assert.strictEqual(response.status, 404, target)
          assert.strictEqual(errorCode(response.json), "not_found")
        }
        for (const target of [
          `/api/v1/organizations/mem-org/memories/${"m".repeat(129)}`,
          `/api/v1/organizations/${"o".repeat(129)}/memories/${f.approved.id}`
        ]) {
          const long = yield* request(target, { headers: { cookie: f.member.cookie } })
          assert.strictEqual(long.status, 400, target)
          assert.strictEqual(errorCode(long.json), "invalid_path_parameter")
        }
      })
  )
})
