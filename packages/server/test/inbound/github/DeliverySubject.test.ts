/**
 * What a GitHub delivery is about, for the inbox's per-subject order: a pull request's own events
 * and its comments share one subject (issues and pull requests share a repository's numbers), an
 * installation's events another, a repository's pushes another; any other event, or a payload
 * without the ids, has none. By GitHub's ids, so a rename changes nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { subjectOf } from "../../../src/inbound/github/GithubWebhooksHttp.ts"

const id = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })

describe("the subject of a GitHub delivery", () => {
  it("is the pull request for its events and its comments, whichever field carries the number", () => {
    fc.assert(
      fc.property(id, fc.integer({ min: 1, max: 1_000_000 }), fc.string(), (repository, number, name) => {
        const repo = { id: repository, name, owner: { id: 1, login: name } }
        const expected = `pr:${repository}:${number}`
        assert.strictEqual(subjectOf("pull_request", { number, pull_request: { number }, repository: repo }), expected)
        assert.strictEqual(
          subjectOf("pull_request_review_comment", { pull_request: { number }, repository: repo }),
          expected
        )
        assert.strictEqual(subjectOf("pull_request_review", { pull_request: { number }, repository: repo }), expected)
        assert.strictEqual(subjectOf("issue_comment", { issue: { number }, repository: repo }), expected)
        assert.strictEqual(subjectOf("issues", { issue: { number }, repository: repo }), expected)
      })
    )
  })

  it("is the installation for installation events and the repository for pushes", () => {
    fc.assert(
      fc.property(id, id, (installation, repository) => {
        assert.strictEqual(
          subjectOf("installation", { installation: { id: installation } }),
          `installation:${installation}`
        )
        assert.strictEqual(
          subjectOf("installation_repositories", { installation: { id: installation }, repositories_added: [] }),
          `installation:${installation}`
        )
        assert.strictEqual(
          subjectOf("push", { ref: "refs/heads/main", repository: { id: repository } }),
          `push:${repository}`
        )
      })
    )
  })

  it("is none for other events and for payloads without the ids it needs", () => {
    assert.isNull(subjectOf("ping", { zen: "Keep it logically awesome.", hook_id: 1 }))
    assert.isNull(subjectOf("check_run", { check_run: { id: 5 }, repository: { id: 9 } }))
    assert.isNull(subjectOf("pull_request", { number: 7 }))
    assert.isNull(subjectOf("pull_request", { repository: { id: 9 } }))
    assert.isNull(subjectOf("issue_comment", { issue: { number: "7" }, repository: { id: 9 } }))
    assert.isNull(subjectOf("installation", { installation: { id: 1.5 } }))
    assert.isNull(subjectOf("push", { repository: null }))
  })
})
