/**
 * Memories over real HTTP (docs/interface.md: Organization endpoints, Resources "Memory"): the
 * list, one memory by id and the enable/disable PATCH, field by field; 409 for a memory that is not
 * approved; 401, 404 across organizations, 403 below ADMIN, 400 for bad input; last_toggled_at/by
 * and audit evidence.
 */
import type { Memory } from "@bosun/domain"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type FeedbackSource, MemoriesRepo } from "../../../src/features/memories/MemoriesRepo.ts"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

const patch = (cookie: string, path: string, body: unknown) =>
  request(path, {
    method: "PATCH",
    headers: { cookie, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

const post = (cookie: string, path: string, body: unknown) =>
  request(path, {
    method: "POST",
    headers: { cookie, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

const source = (runId: string, excerpt: string): FeedbackSource => ({
  sourceType: "REVIEW_REPLY",
  sourceUrl: `https://github.example/acme/service/pull/7#discussion_r${runId.length}`,
  commentId: 9_001,
  pullRequestNumber: 7,
  filePath: "src/db.ts",
  findingId: null,
  runId,
  actor: "dev-anna",
  excerpt
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
        "effect",
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
        "sources",
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
          effect: {
            runs: 0,
            findings_shaped: 0,
            findings_suppressed: 0,
            feedback: { open: 0, resolved: 0, dismissed: 0 }
          },
          sources: [],
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
      // Recorded without metadata: every key of the metadata is there, null.
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
          effect: {
            runs: 0,
            findings_shaped: 0,
            findings_suppressed: 0,
            feedback: { open: 0, resolved: 0, dismissed: 0 }
          },
          sources: [],
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

  it.effect(
    "approves a proposed memory once: approved_by/at recorded, audited, disabled until enabled; a second decision is 409 memory_already_decided and changes nothing",
    () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const sql = yield* SqlClient.SqlClient
        const path = `/api/v1/organizations/mem-org/memories/${f.proposed.id}/decision`
        const approved = yield* post(f.admin.cookie, path, { decision: "approve" })
        assert.strictEqual(approved.status, 200, approved.text)
        const memory = (approved.json as { data: Memory }).data
        assert.strictEqual(memory.lifecycle, "APPROVED")
        assert.strictEqual(memory.approved_by, f.admin.userId)
        assert.strictEqual(memory.approved_by_login, "mem-admin")
        assert.isTrue(Date.now() - Date.parse(memory.approved_at ?? "") < 60_000)
        // `enabled` is set by the PATCH alone (docs/interface.md: Resources "Memory").
        assert.strictEqual(memory.enabled, false)
        const again = yield* post(f.admin.cookie, path, { decision: "reject" })
        assert.strictEqual(again.status, 409)
        assert.strictEqual(errorCode(again.json), "memory_already_decided")
        const after = yield* (yield* MemoriesRepo).find("mem-org", f.proposed.id)
        assert.strictEqual(after._tag === "Some" ? after.value.lifecycle : undefined, "APPROVED")
        const audits = yield* sql<{ action: string }>`
          SELECT action FROM audit_events WHERE target = ${`memory:${f.proposed.id}`} ORDER BY created_at`
        assert.deepStrictEqual(
          audits.map((row) => row.action),
          ["memory.approve"]
        )
        const enabled = yield* patch(f.admin.cookie, `/api/v1/organizations/mem-org/memories/${f.proposed.id}`, {
          enabled: true
        })
        assert.strictEqual((enabled.json as { data: Memory }).data.enabled, true)
      })
  )

  it.effect(
    "a rejected memory is REJECTED and cannot be enabled; deciding answers 401 without a session, 404 across organizations, 403 for a MEMBER, 400 for a bad decision, writing nothing",
    () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const sql = yield* SqlClient.SqlClient
        const path = `/api/v1/organizations/mem-org/memories/${f.proposed.id}/decision`
        const anonymous = yield* request(path, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ decision: "approve" })
        })
        assert.strictEqual(anonymous.status, 401)
        for (const [cookie, target] of [
          [f.outsider.cookie, path],
          [f.admin.cookie, `/api/v1/organizations/mem-org/memories/${f.foreign.id}/decision`],
          [f.admin.cookie, `/api/v1/organizations/mem-other/memories/${f.foreign.id}/decision`],
          [f.admin.cookie, "/api/v1/organizations/mem-org/memories/no-such-memory/decision"]
        ] as const) {
          const response = yield* post(cookie, target, { decision: "approve" })
          assert.strictEqual(response.status, 404, target)
          assert.strictEqual(errorCode(response.json), "not_found")
        }
        const member = yield* post(f.member.cookie, path, { decision: "approve" })
        assert.strictEqual(member.status, 403)
        for (const body of [{}, { decision: "maybe" }, { decision: true }]) {
          const bad = yield* post(f.admin.cookie, path, body)
          assert.strictEqual(bad.status, 400, JSON.stringify(body))
          assert.strictEqual(errorCode(bad.json), "invalid_body")
        }
        const foreign = yield* (yield* MemoriesRepo).find("mem-other", f.foreign.id)
        assert.strictEqual(foreign._tag === "Some" ? foreign.value.lifecycle : undefined, "PROPOSED")
        const [untouched] = yield* sql<{ lifecycle: string; n: string }>`
          SELECT m.lifecycle, (SELECT count(*)::text FROM audit_events WHERE target = ${`memory:${f.proposed.id}`}) AS n
          FROM memories m WHERE m.id = ${f.proposed.id}`
        assert.deepStrictEqual({ ...untouched }, { lifecycle: "PROPOSED", n: "0" })

        const rejected = yield* post(f.admin.cookie, path, { decision: "reject" })
        assert.strictEqual(rejected.status, 200, rejected.text)
        const memory = (rejected.json as { data: Memory }).data
        assert.deepStrictEqual([memory.lifecycle, memory.approved_by, memory.approved_at], ["REJECTED", null, null])
        const enable = yield* patch(f.admin.cookie, `/api/v1/organizations/mem-org/memories/${f.proposed.id}`, {
          enabled: true
        })
        assert.strictEqual(enable.status, 409)
        assert.strictEqual(errorCode(enable.json), "memory_not_approved")
      })
  )

  it.effect(
    "a distilled convention is proposed with its provenance; one that restates it (named, or in other case and punctuation) is merged with its source appended, and a run that publishes again appends nothing",
    () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const memories = yield* MemoriesRepo
        const learned = {
          convention: "Queries go through db.query with parameters.",
          purpose: "no SQL injection",
          rationale: "the team's data layer parameterizes",
          scope: "REPOSITORY" as const,
          language: "typescript",
          restatesMemoryId: null
        }
        const first = yield* memories.learn(
          "mem-org",
          f.repository.id,
          learned,
          source("run-a", "we always use db.query")
        )
        assert.isFalse(first.merged)
        assert.strictEqual(first.memory.lifecycle, "PROPOSED")
        assert.strictEqual(first.memory.scope, "REPOSITORY")
        assert.strictEqual(first.memory.repository_id, f.repository.id)
        assert.strictEqual(first.memory.source_type, "REVIEW_REPLY")
        assert.strictEqual(first.memory.source_run_id, "run-a")
        assert.strictEqual(first.memory.source_actor, "dev-anna")
        assert.strictEqual(first.memory.proposed_by_login, "dev-anna")
        assert.isNull(first.memory.proposed_by)
        assert.deepStrictEqual(first.memory.metadata, {
          file_path: "src/db.ts",
          language: "typescript",
          pull_request_number: 7,
          source_comment_id: 9_001
        })
        assert.deepStrictEqual(
          first.memory.sources.map((entry) => [entry.source_run_id, entry.excerpt, entry.source_actor]),
          [["run-a", "we always use db.query", "dev-anna"]]
        )

        const sameWords = yield* memories.learn(
          "mem-org",
          f.repository.id,
          { ...learned, convention: "queries go through DB.query, with parameters" },
          source("run-b", "db.query again")
        )
        assert.isTrue(sameWords.merged)
        assert.strictEqual(sameWords.memory.id, first.memory.id)
        const named = yield* memories.learn(
          "mem-org",
          f.repository.id,
          { ...learned, convention: "Parameterize SQL", restatesMemoryId: first.memory.id },
          source("run-c", "parameterize please")
        )
        assert.deepStrictEqual([named.merged, named.memory.id], [true, first.memory.id])
        const replayed = yield* memories.learn("mem-org", f.repository.id, learned, source("run-c", "parameterize"))
        assert.deepStrictEqual([replayed.merged, replayed.memory.id], [true, first.memory.id])
        assert.deepStrictEqual(
          replayed.memory.sources.map((entry) => entry.source_run_id),
          ["run-a", "run-b", "run-c"]
        )
        // Another organization's memory of the same words is not merged into.
        const other = yield* memories.learn(
          "mem-other",
          null,
          { ...learned, scope: "ORGANIZATION" },
          source("run-d", "x")
        )
        assert.isFalse(other.merged)
        assert.strictEqual(other.memory.scope, "ORGANIZATION")
        const listed = (yield* memories.list("mem-org")).filter((memory) => memory.convention === learned.convention)
        assert.strictEqual(listed.length, 1)
      })
  )

  it.effect(
    "a memory's effect counts the runs it was given to, the findings it shaped or suppressed there, and the feedback on the shaped findings since",
    () =>
      Effect.gen(function* () {
        const f = yield* fixture
        const sql = yield* SqlClient.SqlClient
        const memories = yield* MemoriesRepo
        const approved = yield* memories.propose("mem-org", { repositoryId: f.repository.id, convention: "Effect.fn" })
        yield* memories.decide("mem-org", approved.id, true, f.admin.userId)
        const none = yield* memories.forRun("mem-org", f.repository.id, { runId: "r0", workflowType: "review" })
        assert.isFalse(
          none.some((memory) => memory.id === approved.id),
          "a disabled memory is given to no run"
        )
        yield* memories.toggle("mem-org", approved.id, true, f.admin.userId)
        for (const runId of ["r1", "r2", "r2"]) {
          const given = yield* memories.forRun("mem-org", f.repository.id, { runId, workflowType: "review" })
          assert.isTrue(given.some((memory) => memory.id === approved.id))
        }
        const other = yield* memories.forRun("mem-org", null, { runId: "r3", workflowType: "work_item_intake" })
        assert.isFalse(
          other.some((memory) => memory.id === approved.id),
          "a repository's memory is not the organization's"
        )
        for (const [fingerprint, state] of [
          ["fp-open", "OPEN"],
          ["fp-fixed", "RESOLVED"],
          ["fp-wrong", "DISMISSED"]
        ] as const) {
          yield* sql`
            INSERT INTO review_findings (organization_id, repository_id, pull_request_number, fingerprint, path,
                                         start_line, end_line, side, severity, category, title, placement, state,
                                         first_run_id, last_run_id)
            VALUES ('mem-org', ${f.repository.id}, 7, ${fingerprint}, 'src/a.ts', 1, 1, 'RIGHT', 'LOW', 'style',
                    ${fingerprint}, 'INLINE', ${state}, 'r1', 'r1')`
        }
        const shaped = (fingerprint: string) => ({
          memoryId: approved.id,
          effect: "SHAPED" as const,
          fingerprint,
          path: "src/a.ts",
          note: null
        })
        yield* memories.recordEffects("mem-org", "r1", { repositoryId: f.repository.id, number: 7 }, [
          shaped("fp-open"),
          shaped("fp-fixed"),
          { memoryId: approved.id, effect: "SUPPRESSED", fingerprint: null, path: "src/b.ts", note: "fine here" },
          // A memory the run was not given is not credited.
          { ...shaped("fp-open"), memoryId: f.proposed.id }
        ])
        yield* memories.recordEffects("mem-org", "r2", { repositoryId: f.repository.id, number: 7 }, [
          shaped("fp-open"),
          shaped("fp-wrong")
        ])
        const response = yield* request(`/api/v1/organizations/mem-org/memories/${approved.id}`, {
          headers: { cookie: f.member.cookie }
        })
        assert.deepStrictEqual((response.json as { data: Memory }).data.effect, {
          runs: 2,
          findings_shaped: 3,
          findings_suppressed: 1,
          feedback: { open: 1, resolved: 1, dismissed: 1 }
        })
        const proposed = yield* memories.find("mem-org", f.proposed.id)
        assert.strictEqual(proposed._tag === "Some" ? proposed.value.effect.findings_shaped : -1, 0)
      })
  )
})
