/**
 * The review publish step with automatic_pr_description against the fake GitHub through
 * the real Octokit clients: the agent's description goes into the pull request's body between
 * Bosun's markers beside the author's text, patched once per run by the review's delivery — not
 * again when publish runs again, after a failed PATCH or a PATCH that landed unrecorded — a later run replaces only the
 * section, and with the feature DISABLED the body is never touched.
 */
import type { AttemptRun } from "@bosun/actors/attempt/AttemptPorts"
import { FakeGithub } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { ConfigurationRepo } from "../../../src/features/agentConnections/ConfigurationRepo.ts"
import { PullRequestsRepo } from "../../../src/features/repositories/PullRequestsRepo.ts"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { DESCRIPTION_START, descriptionSection } from "../../../src/features/reviews/PrDescription.ts"
import { REVIEW } from "../../../src/features/reviews/ReviewWorkflow.ts"
import { layerReviewPublishStack, publishAndDeliver, redeliver } from "../../support/ReviewPublishStack.ts"

const ORG = "describe-org"
const REPO = "acme/shop"

const Publish = layerReviewPublishStack(ORG, REPO)

const sha = (c: string) => c.repeat(40)

const LINES = Array.from({ length: 10 }, (_, i) => `const v${i + 1} = input[${i + 1}]`)
const PATCH = [`@@ -0,0 +1,${LINES.length} @@`, ...LINES.map((line) => `+${line}`)].join("\n")

const FINDING = {
  path: "src/handler.ts",
  start_line: 3,
  end_line: 3,
  side: "RIGHT" as const,
  severity: "HIGH" as const,
  category: "security",
  title: "Unsanitized input reaches the query",
  body: "Unsanitized input reaches the query: explained."
}

const FIRST_DESCRIPTION = "Adds the request handler.\n\n**How to test:** `npm test`.\n\n**Risks:** unvalidated input."
const SECOND_DESCRIPTION = "Adds the request handler, now with sanitized input.\n\n**Risks:** none known."

const setAutomaticDescription = (value: "ENABLED" | "DISABLED") =>
  Effect.flatMap(ConfigurationRepo, (configurations) =>
    configurations.setOrganizationGroup(ORG, "agent", { automatic_pr_description: value }, null)
  )

const setup = (number: number, head: string, body: string | null) =>
  Effect.gen(function* () {
    const fake = yield* FakeGithub
    fake.setPull(REPO, {
      number,
      head: { sha: head, ref: `feature-${number}` },
      base: { sha: sha("0"), ref: "main" },
      title: `Feature ${number}`,
      body,
      files: [{ filename: "src/handler.ts", status: "added", additions: LINES.length, deletions: 0, patch: PATCH }]
    })
    const repository = yield* (yield* RepositoriesRepo).upsert(ORG, {
      githubRepositoryId: 55_601,
      owner: "acme",
      name: "shop",
      defaultBranch: "main"
    })
    yield* (yield* PullRequestsRepo).upsert(ORG, {
      repositoryId: repository.id,
      number,
      title: `Feature ${number}`,
      authorLogin: "dev"
    })
    return { fake, repositoryId: repository.id }
  })

const run = (runId: string, repositoryId: string, number: number, head: string): AttemptRun => ({
  organizationId: ORG,
  runId,
  attempt: 1,
  attemptId: `${runId}:1`,
  workflowType: REVIEW,
  repositoryId,
  headSha: head,
  baseSha: sha("0"),
  pullRequestNumber: number,
  inputSnapshot: {}
})

const patches = (fake: FakeGithub["Service"], number: number) =>
  fake.requests.filter(
    (request) => request.method === "PATCH" && request.path === `/api/v3/repos/${REPO}/pulls/${number}`
  ).length

const descriptionEffect = (runId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ status: string; request: { description: string }; result: Record<string, unknown> | null }>`
      SELECT status, request, result FROM provider_effects
      WHERE organization_id = ${ORG} AND idempotency_key = ${`github.pr_description:${runId}`}`
  )

layer(Publish, { excludeTestServices: true })("pull request description on publish", (it) => {
  describe("automatic_pr_description ENABLED", () => {
    it.effect("puts the description after the author's text, once: publish running again patches nothing more", () =>
      Effect.gen(function* () {
        yield* setAutomaticDescription("ENABLED")
        const human = "Fixes #31\r\n\r\nThe handler for the new endpoint."
        const { fake, repositoryId } = yield* setup(1, sha("1"), human)
        const output = { summary: "Adds the handler.", findings: [FINDING], description: FIRST_DESCRIPTION }
        yield* publishAndDeliver(run("run-d1", repositoryId, 1, sha("1")), output)

        assert.strictEqual(fake.reviews(REPO, 1).length, 1)
        assert.strictEqual(fake.pullBody(REPO, 1), `${human}\r\n\r\n${descriptionSection(FIRST_DESCRIPTION)}`)
        assert.include(fake.pullBody(REPO, 1) ?? "", "### Summary by Bosun")
        assert.strictEqual(patches(fake, 1), 1)
        const [effect] = yield* descriptionEffect("run-d1")
        assert.strictEqual(effect?.status, "SUCCEEDED")
        assert.strictEqual(effect?.request.description, FIRST_DESCRIPTION)

        yield* publishAndDeliver(run("run-d1", repositoryId, 1, sha("1")), output)
        assert.strictEqual(patches(fake, 1), 1, "a publish that runs again does not patch twice")
        assert.strictEqual(fake.reviews(REPO, 1).length, 1)
      })
    )

    it.effect("a PATCH that failed is made on the retry; one that landed unrecorded is not made again", () =>
      Effect.gen(function* () {
        yield* setAutomaticDescription("ENABLED")
        const { fake, repositoryId } = yield* setup(2, sha("2"), "Author's notes.")
        // Past the call's own retries: the delivery fails after the review was posted; the next one patches.
        fake.failNext({ method: "PATCH", path: new RegExp(`^/api/v3/repos/${REPO}/pulls/2$`), status: 502, times: 4 })
        const output = { summary: "Adds the handler.", findings: [], description: FIRST_DESCRIPTION }

        yield* publishAndDeliver(run("run-d2", repositoryId, 2, sha("2")), output)
        assert.strictEqual(fake.pullBody(REPO, 2), `Author's notes.\n\n${descriptionSection(FIRST_DESCRIPTION)}`)
        assert.strictEqual(patches(fake, 2), 5, "four failed PATCHes (one delivery) and the next delivery's")
        assert.strictEqual(fake.reviews(REPO, 2).length, 1)

        // A crash after GitHub took the PATCH but before it was recorded: the body already says it.
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE provider_effects SET status = 'PENDING'
                   WHERE organization_id = ${ORG} AND idempotency_key = 'github.pr_description:run-d2'`
        yield* redeliver("run-d2")
        assert.strictEqual(patches(fake, 2), 5, "an unchanged body is not patched")
        const [effect] = yield* descriptionEffect("run-d2")
        assert.deepStrictEqual(
          { status: effect?.status, result: effect?.result },
          { status: "SUCCEEDED", result: { updated: false } }
        )
      })
    )

    it.effect("a later run replaces only Bosun's section, keeping what the author wrote before and after it", () =>
      Effect.gen(function* () {
        yield* setAutomaticDescription("ENABLED")
        const { fake, repositoryId } = yield* setup(3, sha("3"), "Fixes #33")
        yield* publishAndDeliver(run("run-d3a", repositoryId, 3, sha("3")), {
          summary: "First.",
          findings: [FINDING],
          description: FIRST_DESCRIPTION
        })
        const first = fake.pullBody(REPO, 3) ?? ""
        assert.strictEqual(first, `Fixes #33\n\n${descriptionSection(FIRST_DESCRIPTION)}`)

        // The author adds a checklist under Bosun's section, then pushes.
        const edited = `${first}\n\n- [x] migration reviewed\n`
        fake.setPull(REPO, { number: 3, body: edited, head: { sha: sha("4"), ref: "feature-3" } })
        fake.setCompare(REPO, sha("3"), sha("4"), ["src/handler.ts"])
        yield* publishAndDeliver(run("run-d3b", repositoryId, 3, sha("4")), {
          summary: "Second.",
          findings: [],
          description: SECOND_DESCRIPTION
        })
        const second = fake.pullBody(REPO, 3) ?? ""
        assert.strictEqual(
          second,
          `Fixes #33\n\n${descriptionSection(SECOND_DESCRIPTION)}\n\n- [x] migration reviewed\n`
        )
        assert.notInclude(second, "**How to test:**")
        assert.strictEqual(second.split(DESCRIPTION_START).length - 1, 1)
        assert.strictEqual(patches(fake, 3), 2)
      })
    )

    it.effect("a review without a description leaves the body alone", () =>
      Effect.gen(function* () {
        yield* setAutomaticDescription("ENABLED")
        const { fake, repositoryId } = yield* setup(4, sha("5"), "Untouched.")
        yield* publishAndDeliver(run("run-d4", repositoryId, 4, sha("5")), { summary: "No description.", findings: [] })
        assert.strictEqual(fake.reviews(REPO, 4).length, 1)
        assert.strictEqual(fake.pullBody(REPO, 4), "Untouched.")
        assert.strictEqual(patches(fake, 4), 0)
        assert.deepStrictEqual(yield* descriptionEffect("run-d4"), [])
      })
    )
  })

  describe("automatic_pr_description DISABLED", () => {
    it.effect("the body is not touched and no PATCH is made, even when the agent wrote a description", () =>
      Effect.gen(function* () {
        yield* setAutomaticDescription("DISABLED")
        const { fake, repositoryId } = yield* setup(5, sha("6"), "The author's own description.")
        const output = { summary: "Adds the handler.", findings: [FINDING], description: FIRST_DESCRIPTION }
        yield* publishAndDeliver(run("run-d5", repositoryId, 5, sha("6")), output)
        yield* publishAndDeliver(run("run-d5", repositoryId, 5, sha("6")), output)

        assert.strictEqual(fake.reviews(REPO, 5).length, 1, "the review itself is posted")
        assert.strictEqual(fake.pullBody(REPO, 5), "The author's own description.")
        assert.strictEqual(patches(fake, 5), 0)
        assert.deepStrictEqual(yield* descriptionEffect("run-d5"), [])
      })
    )
  })
})
