/**
 * Context suggestions over real HTTP (docs/interface.md: Organization endpoints,
 * Resources "Context suggestion"): one suggestion and the decision's shape field by field;
 * approving adds the secondary repository to the configuration's secondary_repository_ids,
 * rejecting does not; deciding twice is 409; 400 for an unknown decision or an over-long id; 401,
 * 404 across organizations and repositories, 403 below ADMIN.
 */
import type { ContextSuggestion, RepositoryConfiguration } from "@bosun/domain"
import { assert, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { ContextSuggestionsRepo } from "../../../src/features/contextSuggestions/ContextSuggestionsRepo.ts"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

const decide = (cookie: string, org: string, repositoryId: string, suggestionId: string, decision: unknown) =>
  request(`/api/v1/organizations/${org}/repositories/${repositoryId}/context-suggestions/${suggestionId}/decision`, {
    method: "POST",
    headers: { cookie, "content-type": "application/json" },
    body: JSON.stringify({ decision })
  })

const fixture = (org: string) =>
  Effect.gen(function* () {
    const repositories = yield* RepositoriesRepo
    const suggestions = yield* ContextSuggestionsRepo
    const admin = yield* signIn(`cs-admin-${org}`, [[org, "ADMIN"]])
    const member = yield* signIn(`cs-member-${org}`, [[org, "MEMBER"]])
    const primary = yield* repositories.upsert(org, {
      githubRepositoryId: null,
      owner: "acme",
      name: "app",
      defaultBranch: "main"
    })
    const secondary = yield* repositories.upsert(org, {
      githubRepositoryId: null,
      owner: "acme",
      name: "lib",
      defaultBranch: "main"
    })
    const suggestion = yield* suggestions
      .propose(org, {
        primaryRepositoryId: primary.id,
        secondaryRepositoryId: secondary.id,
        secondaryOwner: "acme",
        secondaryName: "lib",
        source: "IMPORT_ANALYSIS",
        reason: "app imports acme/lib"
      })
      .pipe(Effect.map(Option.getOrThrow))
    return { admin, member, primary, secondary, suggestion }
  })

const getSuggestion = (cookie: string, org: string, repositoryId: string, suggestionId: string) =>
  request(`/api/v1/organizations/${org}/repositories/${repositoryId}/context-suggestions/${suggestionId}`, {
    headers: { cookie }
  })

const secondaryIds = (cookie: string, org: string, repositoryId: string) =>
  Effect.map(
    request(`/api/v1/organizations/${org}/repositories/${repositoryId}/configuration`, { headers: { cookie } }),
    (response) => (response.json as { data: RepositoryConfiguration }).data.secondary_repository_ids
  )

layer(layerTestServer(), { excludeTestServices: true })("context suggestions", (it) => {
  it.effect("approving returns the decided suggestion, field by field, and adds the secondary repository", () =>
    Effect.gen(function* () {
      const f = yield* fixture("cs-approve")
      const response = yield* decide(f.admin.cookie, "cs-approve", f.primary.id, f.suggestion.id, "approve")
      assert.strictEqual(response.status, 200)
      const decided = (response.json as { data: ContextSuggestion }).data
      assert.deepStrictEqual(
        { ...decided, decided_at: "t", proposed_at: "t" },
        {
          access_valid: true,
          decided_at: "t",
          decided_by: f.admin.userId,
          id: f.suggestion.id,
          organization_id: "cs-approve",
          primary_repository_id: f.primary.id,
          proposed_at: "t",
          reason: "app imports acme/lib",
          secondary_name: "lib",
          secondary_owner: "acme",
          secondary_repository_id: f.secondary.id,
          source: "IMPORT_ANALYSIS",
          state: "APPROVED"
        }
      )
      assert.deepStrictEqual(yield* secondaryIds(f.member.cookie, "cs-approve", f.primary.id), [f.secondary.id])
      const again = yield* decide(f.admin.cookie, "cs-approve", f.primary.id, f.suggestion.id, "reject")
      assert.strictEqual(again.status, 409)
      assert.strictEqual(errorCode(again.json), "suggestion_already_decided")
      const list = yield* request(`/api/v1/organizations/cs-approve/repositories/${f.primary.id}/context-suggestions`, {
        headers: { cookie: f.member.cookie }
      })
      assert.deepStrictEqual((list.json as { data: ReadonlyArray<ContextSuggestion> }).data, [decided])
    })
  )

  it.effect("two approvals at once for one repository keep both secondary repositories", () =>
    Effect.gen(function* () {
      const f = yield* fixture("cs-race")
      const repositories = yield* RepositoriesRepo
      const suggestions = yield* ContextSuggestionsRepo
      const third = yield* repositories.upsert("cs-race", {
        githubRepositoryId: null,
        owner: "acme",
        name: "sdk",
        defaultBranch: "main"
      })
      const second = yield* suggestions
        .propose("cs-race", {
          primaryRepositoryId: f.primary.id,
          secondaryRepositoryId: third.id,
          secondaryOwner: "acme",
          secondaryName: "sdk",
          source: "IMPORT_ANALYSIS"
        })
        .pipe(Effect.map(Option.getOrThrow))
      const results = yield* Effect.all(
        [
          decide(f.admin.cookie, "cs-race", f.primary.id, f.suggestion.id, "approve"),
          decide(f.admin.cookie, "cs-race", f.primary.id, second.id, "approve")
        ],
        { concurrency: 2 }
      )
      assert.deepStrictEqual(
        results.map((r) => r.status),
        [200, 200]
      )
      const ids = yield* secondaryIds(f.member.cookie, "cs-race", f.primary.id)
      assert.deepStrictEqual([...ids].sort(), [f.secondary.id, third.id].sort())
    })
  )

  it.effect("rejecting leaves the configuration as it was", () =>
    Effect.gen(function* () {
      const f = yield* fixture("cs-reject")
      const response = yield* decide(f.admin.cookie, "cs-reject", f.primary.id, f.suggestion.id, "reject")
      assert.strictEqual((response.json as { data: ContextSuggestion }).data.state, "REJECTED")
      assert.deepStrictEqual(yield* secondaryIds(f.member.cookie, "cs-reject", f.primary.id), [])
    })
  )

  it.effect(
    "answers 400 for an unknown decision, 401, 404 across organizations and repositories, 403 for a MEMBER",
    () =>
      Effect.gen(function* () {
        const f = yield* fixture("cs-guard")
        const other = yield* fixture("cs-guard-other")
        for (const decision of ["APPROVE", "maybe", true]) {
          const response = yield* decide(f.admin.cookie, "cs-guard", f.primary.id, f.suggestion.id, decision)
          assert.strictEqual(response.status, 400, String(decision))
          assert.strictEqual(errorCode(response.json), "invalid_body")
        }
        const anonymous = yield* request(
          `/api/v1/organizations/cs-guard/repositories/${f.primary.id}/context-suggestions/${f.suggestion.id}/decision`,
          {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ decision: "approve" })
          }
        )
        assert.strictEqual(anonymous.status, 401)
        for (const [org, repositoryId, suggestionId] of [
          ["cs-guard", f.primary.id, other.suggestion.id],
          ["cs-guard", f.secondary.id, f.suggestion.id],
          ["cs-guard-other", other.primary.id, other.suggestion.id],
          ["cs-guard", f.primary.id, "missing"]
        ] as const) {
          const response = yield* decide(f.admin.cookie, org, repositoryId, suggestionId, "approve")
          assert.strictEqual(response.status, 404, `${org}/${repositoryId}/${suggestionId}`)
        }
        const member = yield* decide(f.member.cookie, "cs-guard", f.primary.id, f.suggestion.id, "approve")
        assert.strictEqual(member.status, 403)
        const untouched = yield* request(
          `/api/v1/organizations/cs-guard-other/repositories/${other.primary.id}/context-suggestions`,
          {
            headers: { cookie: other.admin.cookie }
          }
        )
        assert.strictEqual((untouched.json as { data: ReadonlyArray<ContextSuggestion> }).data[0]?.state, "PROPOSED")
      })
  )

  it.effect("reads one suggestion under its repository's path, field by field, before and after its decision", () =>
    Effect.gen(function* () {
      const f = yield* fixture("cs-get")
      const response = yield* getSuggestion(f.member.cookie, "cs-get", f.primary.id, f.suggestion.id)
      assert.strictEqual(response.status, 200, response.text)
      const body = response.json as { data: ContextSuggestion }
      assert.deepStrictEqual(Object.keys(body), ["data"])
      assert.deepStrictEqual(
        { ...body.data, proposed_at: "t" },
        {
          access_valid: true,
          decided_at: null,
          decided_by: null,
          id: f.suggestion.id,
          organization_id: "cs-get",
          primary_repository_id: f.primary.id,
          proposed_at: "t",
          reason: "app imports acme/lib",
          secondary_name: "lib",
          secondary_owner: "acme",
          secondary_repository_id: f.secondary.id,
          source: "IMPORT_ANALYSIS",
          state: "PROPOSED"
        }
      )
      assert.deepStrictEqual(body.data, f.suggestion)
      const decided = yield* decide(f.admin.cookie, "cs-get", f.primary.id, f.suggestion.id, "reject")
      const after = yield* getSuggestion(f.member.cookie, "cs-get", f.primary.id, f.suggestion.id)
      assert.deepStrictEqual(
        (after.json as { data: ContextSuggestion }).data,
        (decided.json as { data: ContextSuggestion }).data
      )
    })
  )

  it.effect(
    "reading one suggestion answers 401 without a session, 404 under another repository of the organization, for another organization's suggestion, to a stranger or for an unknown id, 400 for 129-character ids",
    () =>
      Effect.gen(function* () {
        const f = yield* fixture("cs-get-guard")
        const other = yield* fixture("cs-get-guard-other")
        const anonymous = yield* request(
          `/api/v1/organizations/cs-get-guard/repositories/${f.primary.id}/context-suggestions/${f.suggestion.id}`
        )
        assert.strictEqual(anonymous.status, 401)
        assert.strictEqual(errorCode(anonymous.json), "session_required")
        for (const [cookie, org, repositoryId, suggestionId] of [
          // The secondary repository is in the organization, but the suggestion is not its own.
          [f.member.cookie, "cs-get-guard", f.secondary.id, f.suggestion.id],
          [f.member.cookie, "cs-get-guard", f.primary.id, other.suggestion.id],
          [f.member.cookie, "cs-get-guard-other", other.primary.id, other.suggestion.id],
          [other.admin.cookie, "cs-get-guard", f.primary.id, f.suggestion.id],
          [f.member.cookie, "cs-get-guard", f.primary.id, "missing"],
          [f.member.cookie, "cs-get-guard", "no-such-repository", f.suggestion.id]
        ] as const) {
          const response = yield* getSuggestion(cookie, org, repositoryId, suggestionId)
          assert.strictEqual(response.status, 404, `${org}/${repositoryId}/${suggestionId}`)
          assert.strictEqual(errorCode(response.json), "not_found")
        }
        for (const [org, repositoryId, suggestionId] of [
          ["cs-get-guard", f.primary.id, "s".repeat(129)],
          ["cs-get-guard", "r".repeat(129), f.suggestion.id],
          ["o".repeat(129), f.primary.id, f.suggestion.id]
        ] as const) {
          const response = yield* getSuggestion(f.member.cookie, org, repositoryId, suggestionId)
          assert.strictEqual(response.status, 400, `${org}/${repositoryId}/${suggestionId}`)
          assert.strictEqual(errorCode(response.json), "invalid_path_parameter")
        }
      })
  )
})
