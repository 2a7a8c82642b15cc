/**
 * GitHub's published descriptions as an oracle: REST requests and answers checked against the
 * OpenAPI description (path templates, path and query parameters, JSON bodies, `nullable`), and
 * GraphQL requests against GitHub's schema (unknown and deprecated fields, variable types).
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import {
  graphqlRequestViolations,
  restOperation,
  restRequestViolations,
  restResponseViolations
} from "../src/GithubDescription.ts"

const REVIEWS = "POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews"

const review = {
  commit_id: "4f2b3c1d9e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c",
  body: "Bosun found one problem.",
  event: "COMMENT",
  comments: [{ path: "src/app.ts", body: "This can throw.", line: 12, side: "RIGHT" }]
}

const reviewAnswer = {
  id: 80,
  node_id: "PRR_kwDOAAABc84AAAABBBBBBB",
  user: null,
  body: "Bosun found one problem.",
  state: "COMMENTED",
  commit_id: null,
  html_url: "https://github.com/o/r/pull/1#pullrequestreview-80",
  pull_request_url: "https://api.github.com/repos/o/r/pulls/1",
  _links: {
    html: { href: "https://github.com/o/r/pull/1#pullrequestreview-80" },
    pull_request: { href: "https://api.github.com/repos/o/r/pulls/1" }
  },
  submitted_at: "2024-05-01T12:00:00Z",
  author_association: "NONE"
}

describe("REST requests against GitHub's OpenAPI description", () => {
  it("a review with commit_id, body, COMMENT and a RIGHT-side line comment conforms", () => {
    expect(
      restRequestViolations({ method: "POST", pathname: "/api/v3/repos/o/r/pulls/1/reviews", body: review })
    ).toEqual([])
  })

  it("a review event GitHub does not know is named with the values it allows", () => {
    expect(
      restRequestViolations({
        method: "POST",
        pathname: "/api/v3/repos/o/r/pulls/1/reviews",
        body: { ...review, event: "COMMENTED" }
      })
    ).toEqual([
      `${REVIEWS}: request body /event must be equal to one of the allowed values ("APPROVE", "REQUEST_CHANGES", "COMMENT")`
    ])
  })

  it("a pull number that is not an integer violates the path parameter's type", () => {
    expect(
      restRequestViolations({ method: "POST", pathname: "/api/v3/repos/o/r/pulls/abc/reviews", body: review })
    ).toEqual([`${REVIEWS}: path parameter pull_number must be integer (got "abc")`])
  })

  it("a review POST validates for every integer pull number from 1 and for no non-numeric one", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (number) => {
        expect(
          restRequestViolations({ method: "POST", pathname: `/api/v3/repos/o/r/pulls/${number}/reviews`, body: review })
        ).toEqual([])
      })
    )
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((text) => !/^-?\d+$/.test(text)),
        (text) => {
          const pathname = `/api/v3/repos/o/r/pulls/${encodeURIComponent(text)}/reviews`
          expect(restRequestViolations({ method: "POST", pathname, body: review })).toEqual([
            `${REVIEWS}: path parameter pull_number must be integer (got ${JSON.stringify(text)})`
          ])
        }
      )
    )
  })

  it("a query parameter the operation does not declare is a violation listing the declared ones", () => {
    expect(
      restRequestViolations({
        method: "GET",
        pathname: "/api/v3/repos/o/r/pulls/1/files",
        search: "?per_page=100&pagee=2"
      })
    ).toEqual([
      "GET /repos/{owner}/{repo}/pulls/{pull_number}/files: query parameter pagee is not one GitHub declares here (declared: per_page, page)"
    ])
  })

  it("query values are coerced to their declared type and checked against its enum", () => {
    const checkRuns = (search: string) =>
      restRequestViolations({ method: "GET", pathname: "/api/v3/repos/o/r/commits/abc/check-runs", search })
    expect(checkRuns("check_name=x&filter=all&per_page=100")).toEqual([])
    expect(checkRuns("check_name=x&filter=everything&per_page=many")).toEqual([
      'GET /repos/{owner}/{repo}/commits/{ref}/check-runs: query parameter per_page must be integer (got "many")',
      'GET /repos/{owner}/{repo}/commits/{ref}/check-runs: query parameter filter must be equal to one of the allowed values ("latest", "all")'
    ])
  })

  it("a required query parameter that is missing is a violation", () => {
    expect(restRequestViolations({ method: "GET", pathname: "/api/v3/search/issues" })).toEqual([
      "GET /search/issues: query parameter q is required"
    ])
  })

  it("creating a check run in progress and completing it with a neutral conclusion conform", () => {
    expect(
      restRequestViolations({
        method: "POST",
        pathname: "/api/v3/repos/o/r/check-runs",
        body: { name: "Bosun", head_sha: review.commit_id, status: "in_progress" }
      })
    ).toEqual([])
    expect(
      restRequestViolations({
        method: "PATCH",
        pathname: "/api/v3/repos/o/r/check-runs/123",
        body: { status: "completed", conclusion: "neutral", output: { title: "Bosun", summary: "One problem." } }
      })
    ).toEqual([])
  })

  it("a check run body missing what GitHub requires names each missing property", () => {
    expect(
      restRequestViolations({
        method: "POST",
        pathname: "/api/v3/repos/o/r/check-runs",
        body: { status: "in_progress" }
      })
    ).toEqual([
      "POST /repos/{owner}/{repo}/check-runs: request body (the whole body) must have required property 'name'",
      "POST /repos/{owner}/{repo}/check-runs: request body (the whole body) must have required property 'head_sha'"
    ])
  })

  it("a path or a method GitHub does not have is a violation", () => {
    expect(restRequestViolations({ method: "GET", pathname: "/api/v3/repos/o/r/pulls/1/threads" })).toEqual([
      "GET /repos/o/r/pulls/1/threads: GitHub's REST API has no such path"
    ])
    expect(restRequestViolations({ method: "DELETE", pathname: "/api/v3/repos/o/r/installation" })).toEqual([
      "DELETE /repos/o/r/installation: GitHub's REST API has no DELETE here (it has GET /repos/{owner}/{repo}/installation)"
    ])
  })

  it("requests outside /api/v3 are not REST and have no violations", () => {
    expect(restRequestViolations({ method: "POST", pathname: "/login/oauth/access_token", body: { code: 1 } })).toEqual(
      []
    )
    expect(
      restRequestViolations({ method: "GET", pathname: "/o/r.git/info/refs", search: "service=git-upload-pack" })
    ).toEqual([])
  })
})

describe("REST operations matched by path template", () => {
  const templateOf = (method: string, pathname: string) => restOperation(method, pathname)?.template

  it("literal segments win over templated ones", () => {
    expect(templateOf("GET", "/api/v3/repos/o/r/pulls/comments")).toBe("/repos/{owner}/{repo}/pulls/comments")
    expect(templateOf("GET", "/api/v3/repos/o/r/pulls/7")).toBe("/repos/{owner}/{repo}/pulls/{pull_number}")
    expect(templateOf("GET", "/api/v3/repos/o/r/commits/abc/check-runs")).toBe(
      "/repos/{owner}/{repo}/commits/{ref}/check-runs"
    )
  })

  it("only parameters GitHub marks x-multi-segment span several segments, percent-decoded", () => {
    expect(restOperation("GET", "/api/v3/repos/o/r/contents/src/app.ts")).toMatchObject({
      template: "/repos/{owner}/{repo}/contents/{path}",
      operationId: "repos/get-content",
      pathParameters: { owner: "o", repo: "r", path: "src/app.ts" }
    })
    expect(restOperation("GET", "/api/v3/repos/o/r/commits/heads/main/status")?.pathParameters).toEqual({
      owner: "o",
      repo: "r",
      ref: "heads/main"
    })
    expect(restOperation("GET", "/api/v3/repos/o/r/compare/main...feature/x")?.pathParameters).toEqual({
      owner: "o",
      repo: "r",
      basehead: "main...feature/x"
    })
    expect(restOperation("GET", "/api/v3/repos/o/r/labels/bug%2Fcrash")?.pathParameters.name).toBe("bug/crash")
    expect(restOperation("GET", "/api/v3/repos/o/r/labels/bug/crash")).toBeUndefined()
  })
})

describe("REST answers against GitHub's OpenAPI description", () => {
  const answer = (status: number, body: unknown) =>
    restResponseViolations({ method: "POST", pathname: "/api/v3/repos/o/r/pulls/1/reviews", status, body })

  it("a review answer with the nullable user and commit_id null conforms", () => {
    expect(answer(200, reviewAnswer)).toEqual([])
  })

  it("an installation answer with the account GitHub types as nullable anyOf set to null conforms", () => {
    const installation = {
      id: 700,
      app_id: 7070,
      app_slug: "bosun",
      target_id: 1,
      target_type: "Organization",
      single_file_name: null,
      repository_selection: "selected",
      access_tokens_url: "https://api.github.com/app/installations/700/access_tokens",
      html_url: "https://github.com/organizations/o/settings/installations/700",
      repositories_url: "https://api.github.com/installation/repositories",
      events: ["pull_request"],
      account: null,
      permissions: { pull_requests: "write", checks: "write" },
      created_at: "2024-05-01T12:00:00Z",
      updated_at: "2024-05-01T12:00:00Z",
      suspended_by: null,
      suspended_at: null
    }
    const installationAnswer = (body: unknown) =>
      restResponseViolations({ method: "GET", pathname: "/api/v3/repos/o/r/installation", status: 200, body })
    expect(installationAnswer(installation)).toEqual([])
    expect(
      installationAnswer({ ...installation, repository_selection: "some", permissions: { checks: "admin" } })
    ).toEqual([
      'GET /repos/{owner}/{repo}/installation: 200 answer /repository_selection must be equal to one of the allowed values ("all", "selected")',
      'GET /repos/{owner}/{repo}/installation: 200 answer /permissions/checks must be equal to one of the allowed values ("read", "write")'
    ])
  })

  it("a review answer with a wrong type, a bad date and a missing field names each", () => {
    const { _links: _, ...withoutLinks } = reviewAnswer
    expect(answer(200, { ...withoutLinks, id: "80", submitted_at: "yesterday" })).toEqual([
      `${REVIEWS}: 200 answer (the whole body) must have required property '_links'`,
      `${REVIEWS}: 200 answer /id must be integer`,
      `${REVIEWS}: 200 answer /submitted_at must match format "date-time"`
    ])
  })

  it("an undocumented success status is a violation, an undocumented error status is not", () => {
    expect(answer(201, reviewAnswer)).toEqual([
      `${REVIEWS}: GitHub documents no 201 answer (documented: 200, 403, 422)`
    ])
    expect(answer(404, { message: "Not Found" })).toEqual([])
  })
})

const THREADS = `query ($owner: String!, $name: String!, $number: Int!, $after: String) { repository(owner: $owner, name: $name) { pullRequest(number: $number) { reviewThreads(first: 100, after: $after) { pageInfo { hasNextPage endCursor } nodes { id isResolved comments(first: 1) { nodes { fullDatabaseId } } } } } } }`
const threadVariables = { owner: "o", name: "r", number: 1, after: null }

describe("GraphQL requests against GitHub's schema", () => {
  it("the review threads query with its variables conforms", () => {
    expect(graphqlRequestViolations({ query: THREADS, variables: threadVariables })).toEqual([])
  })

  it("a field GitHub deprecates is a violation quoting the deprecation", () => {
    expect(
      graphqlRequestViolations({ query: THREADS.replace("fullDatabaseId", "databaseId"), variables: threadVariables })
    ).toEqual([
      "The field PullRequestReviewComment.databaseId is deprecated. `databaseId` will be removed because it does not support 64-bit signed integer identifiers. Use `fullDatabaseId` instead. Removal on 2024-07-01 UTC."
    ])
  })

  it("an unknown field is a violation", () => {
    expect(
      graphqlRequestViolations({ query: THREADS.replace("isResolved", "bosunVerdict"), variables: threadVariables })
    ).toEqual(['Cannot query field "bosunVerdict" on type "PullRequestReviewThread".'])
  })

  it("a variable of the wrong type is a violation", () => {
    expect(graphqlRequestViolations({ query: THREADS, variables: { ...threadVariables, number: "1" } })).toEqual([
      'Variable "$number" got invalid value "1"; Int cannot represent non-integer value: "1"'
    ])
  })

  it("resolving a review thread conforms", () => {
    expect(
      graphqlRequestViolations({
        query:
          "mutation ($threadId: ID!) { resolveReviewThread(input: { threadId: $threadId }) { thread { id isResolved } } }",
        variables: { threadId: "PRRT_kwDOAAABc84AAAAB" }
      })
    ).toEqual([])
  })
})
