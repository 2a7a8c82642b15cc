/**
 * `GET .../pull-requests` over real HTTP (docs/interface.md: Organization endpoints,
 * Resources "Pull-request list item"): the item shape field by field; keyset pages that visit every
 * row exactly once, newest-updated first, forwards and back, and stay put when rows are inserted
 * meanwhile (property-based over row counts, ties and page sizes); filters; 400s, 401 and 404.
 */
import type { PullRequestListItem } from "@bosun/domain"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import fc from "fast-check"
import { PullRequestsRepo } from "../../../src/features/repositories/PullRequestsRepo.ts"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

interface Page {
  readonly data: ReadonlyArray<PullRequestListItem>
  readonly meta: { readonly next_cursor: string | null; readonly previous_cursor: string | null }
}

const list = (cookie: string, org: string, query: Record<string, string> = {}) =>
  Effect.map(
    request(`/api/v1/organizations/${org}/pull-requests?${new URLSearchParams(query).toString()}`, {
      headers: { cookie }
    }),
    (response) => {
      assert.strictEqual(response.status, 200, response.text)
      return response.json as Page
    }
  )

/** An organization with `count` pull requests whose updated_at values repeat every `tieEvery`. */
const seed = (org: string, count: number, tieEvery: number) =>
  Effect.gen(function* () {
    const repositories = yield* RepositoriesRepo
    const pullRequests = yield* PullRequestsRepo
    const sql = yield* SqlClient.SqlClient
    const reader = yield* signIn(`reader-${org}`, [[org, "MEMBER"]])
    const repository = yield* repositories.upsert(org, {
      githubRepositoryId: null,
      owner: "acme",
      name: org,
      defaultBranch: "main"
    })
    for (let n = 1; n <= count; n++) {
      const pr = yield* pullRequests.upsert(org, {
        repositoryId: repository.id,
        number: n,
        title: `Change ${n}`,
        authorLogin: `dev${n % 3}`
      })
      yield* sql`UPDATE pull_requests SET updated_at = timestamptz '2026-01-01T00:00:00Z'
                   + make_interval(secs => ${Math.floor(n / tieEvery)}) + interval '1 microsecond' * ${n % 5}
                 WHERE id = ${pr.id}`
    }
    return { reader, repository }
  })

/** The order the API must return: updated_at desc, then id desc. */
const expectedOrder = (org: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{
      id: string
    }>`SELECT id FROM pull_requests WHERE organization_id = ${org} ORDER BY updated_at DESC, id DESC`.pipe(
      Effect.map((rows) => rows.map((row) => row.id))
    )
  )

layer(layerTestServer(), { excludeTestServices: true })("pull requests", (it) => {
  it.effect("lists items with every field of the spec's list item, and meta cursors", () =>
    Effect.gen(function* () {
      const { reader, repository } = yield* seed("pr-shape", 2, 1)
      const page = yield* list(reader.cookie, "pr-shape")
      assert.deepStrictEqual(Object.keys(page).sort(), ["data", "meta"])
      assert.deepStrictEqual(page.meta, { next_cursor: null, previous_cursor: null })
      const [newest] = page.data
      assert.deepStrictEqual(
        { ...newest, created_at: "t", id: "i" },
        {
          author_login: "dev2",
          created_at: "t",
          id: "i",
          number: 2,
          open_findings: 0,
          repository: "acme/pr-shape",
          repository_id: repository.id,
          resolved_findings: 0,
          review_status: "NOT_REVIEWED",
          state: "OPEN",
          title: "Change 2",
          updated_at: "2026-01-01T00:00:02.000Z"
        }
      )
    })
  )

  it.effect("pages visit every pull request exactly once in order, forwards and back (property)", () =>
    Effect.gen(function* () {
      let run = 0
      const samples = fc.sample(
        fc.record({
          count: fc.integer({ min: 0, max: 40 }),
          tieEvery: fc.integer({ min: 1, max: 6 }),
          size: fc.integer({ min: 1, max: 12 })
        }),
        { numRuns: 12, seed: 42 }
      )
      for (const { count, tieEvery, size } of samples) {
        const org = `pr-prop-${run++}`
        const { reader } = yield* seed(org, count, tieEvery)
        const expected = yield* expectedOrder(org)
        const pages: Array<Page> = []
        let page = yield* list(reader.cookie, org, { page_size: String(size) })
        pages.push(page)
        while (page.meta.next_cursor !== null) {
          page = yield* list(reader.cookie, org, { page_size: String(size), cursor: page.meta.next_cursor })
          pages.push(page)
        }
        assert.deepStrictEqual(
          pages.flatMap((p) => p.data.map((item) => item.id)),
          expected,
          `count ${count}, ties every ${tieEvery}, page size ${size}`
        )
        assert.isTrue(pages.slice(0, -1).every((p) => p.data.length === size))
        assert.strictEqual(pages[0]?.meta.previous_cursor, null)
        // Back from the last page, page by page, to the first.
        const back: Array<ReadonlyArray<string>> = [page.data.map((item) => item.id)]
        while (page.meta.previous_cursor !== null) {
          page = yield* list(reader.cookie, org, { page_size: String(size), cursor: page.meta.previous_cursor })
          back.unshift(page.data.map((item) => item.id))
        }
        assert.deepStrictEqual(back.flat(), expected)
      }
    })
  )

  it.effect("keeps the next page as it was when pull requests are inserted meanwhile", () =>
    Effect.gen(function* () {
      const { reader, repository } = yield* seed("pr-stable", 10, 1)
      const first = yield* list(reader.cookie, "pr-stable", { page_size: "4" })
      const before = yield* list(reader.cookie, "pr-stable", { page_size: "4", cursor: first.meta.next_cursor ?? "" })
      const pullRequests = yield* PullRequestsRepo
      for (let n = 100; n < 105; n++) {
        yield* pullRequests.upsert("pr-stable", {
          repositoryId: repository.id,
          number: n,
          title: `New ${n}`,
          authorLogin: null
        })
      }
      const after = yield* list(reader.cookie, "pr-stable", { page_size: "4", cursor: first.meta.next_cursor ?? "" })
      assert.deepStrictEqual(after.data, before.data)
    })
  )

  it.effect("filters by state and by search on title, number or repository", () =>
    Effect.gen(function* () {
      const { reader, repository } = yield* seed("pr-filter", 6, 1)
      const pullRequests = yield* PullRequestsRepo
      yield* pullRequests.upsert("pr-filter", {
        repositoryId: repository.id,
        number: 3,
        title: "Change 3",
        authorLogin: null,
        state: "MERGED"
      })
      yield* pullRequests.upsert("pr-filter", {
        repositoryId: repository.id,
        number: 4,
        title: "Fix the 100% bug_x",
        authorLogin: null,
        state: "CLOSED"
      })
      const merged = yield* list(reader.cookie, "pr-filter", { state: "MERGED" })
      assert.deepStrictEqual(
        merged.data.map((item) => item.number),
        [3]
      )
      const open = yield* list(reader.cookie, "pr-filter", { state: "OPEN" })
      assert.deepStrictEqual([...open.data.map((item) => item.number)].sort(), [1, 2, 5, 6])
      assert.deepStrictEqual(
        (yield* list(reader.cookie, "pr-filter", { search: "change 5" })).data.map((i) => i.number),
        [5]
      )
      assert.deepStrictEqual(
        (yield* list(reader.cookie, "pr-filter", { search: "6" })).data.map((i) => i.number),
        [6]
      )
      assert.deepStrictEqual(
        (yield* list(reader.cookie, "pr-filter", { search: "100%" })).data.map((i) => i.number),
        [4]
      )
      assert.deepStrictEqual(
        (yield* list(reader.cookie, "pr-filter", { search: "_" })).data.map((i) => i.number),
        [4]
      )
      assert.strictEqual((yield* list(reader.cookie, "pr-filter", { search: "acme/pr-filter" })).data.length, 6)
    })
  )

  it.effect("answers 400 for bad page sizes, states and cursors; 401 without a session; 404 across organizations", () =>
    Effect.gen(function* () {
      const { reader } = yield* seed("pr-errors", 1, 1)
      yield* seed("pr-other", 1, 1)
      const get = (query: string, cookie: string | undefined = reader.cookie, org = "pr-errors") =>
        request(
          `/api/v1/organizations/${org}/pull-requests?${query}`,
          cookie === undefined ? {} : { headers: { cookie } }
        )
      for (const [query, code] of [
        ["page_size=0", "invalid_query_parameter"],
        ["page_size=101", "invalid_query_parameter"],
        ["page_size=abc", "invalid_query_parameter"],
        ["page_size=2.5", "invalid_query_parameter"],
        ["state=open", "invalid_query_parameter"],
        ["state=DRAFT", "invalid_query_parameter"],
        ["cursor=not-a-cursor!", "invalid_cursor"],
        [`cursor=${Buffer.from('{"d":"next"}').toString("base64url")}`, "invalid_cursor"],
        [
          `cursor=${Buffer.from('{"d":"next","u":"99999999999999999999","i":"x"}').toString("base64url")}`,
          "invalid_cursor"
        ],
        [
          `cursor=${Buffer.from('{"d":"next","u":"9223372036854775808","i":"x"}').toString("base64url")}`,
          "invalid_cursor"
        ],
        [`search=${"x".repeat(201)}`, "invalid_query_parameter"]
      ] as const) {
        const response = yield* get(query)
        assert.strictEqual(response.status, 400, query)
        assert.strictEqual(errorCode(response.json), code, query)
      }
      assert.strictEqual((yield* get("page_size=100")).status, 200)
      assert.strictEqual((yield* request("/api/v1/organizations/pr-errors/pull-requests")).status, 401)
      const foreign = yield* get("", reader.cookie, "pr-other")
      assert.strictEqual(foreign.status, 404)
      assert.strictEqual(errorCode(foreign.json), "not_found")
    })
  )
})
