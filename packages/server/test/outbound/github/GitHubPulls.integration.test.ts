/**
 * The pull-request client of the GitHub App through the real Octokit REST and GraphQL
 * clients against the local fake GitHub, as the organization's App with a real RSA key: changed
 * files page by page, details, reviews with inline comments and their threads, check runs,
 * description and comments, and every refusal, whose message names the endpoint and status only.
 */
import { generateKeyPairSync } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { FakeGithub, type FakeGithubPullFile } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Option, Redacted } from "effect"
import { OrganizationsRepo } from "../../../src/features/identity/OrganizationsRepo.ts"
import type { ChangedFile } from "../../../src/features/reviews/ReviewPlan.ts"
import { GitHubApp } from "../../../src/outbound/github/GitHubApp.ts"
import { type GitHubAppError, GitHubClient } from "../../../src/outbound/github/GitHubClient.ts"
import { type CheckRunDraft, GitHubPulls, type PullRef } from "../../../src/outbound/github/GitHubPulls.ts"
import { GithubAppsRepo } from "../../../src/outbound/github/GithubAppsRepo.ts"
import { AppConfig } from "../../../src/platform/config/AppConfig.ts"
import { layerMemory } from "../../../src/platform/storage/CacheMemory.ts"
import { testSettings } from "../../support/TestServer.ts"
import { layerTestServices } from "../../support/TestServices.ts"

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
const APP_ID = 5151
const SLUG = "bosun-review"
const ORG = "pulls-org"
const INSTALLATION_ID = 888
const OTHER_INSTALLATION_ID = 889
const HEAD = "a".repeat(40)
const BASE = "b".repeat(40)
const API = { owner: "acme", name: "api" }

/** org `pulls-org` has the App, installed on acme/api (888) and acme/tools (889), not on acme/other. */
const Fixture = Layer.effectDiscard(
  Effect.gen(function* () {
    const fake = yield* FakeGithub
    fake.addApp({
      clientId: "Iv1.pulls",
      clientSecret: "pulls-client-secret",
      appId: APP_ID,
      publicKey: publicKey.export({ type: "spki", format: "pem" }).toString(),
      slug: SLUG
    })
    const account = { id: 9100, login: "acme", type: "Organization" } as const
    fake.addInstallation({ id: INSTALLATION_ID, appId: APP_ID, account, repositories: ["acme/api"] })
    fake.addInstallation({ id: OTHER_INSTALLATION_ID, appId: APP_ID, account, repositories: ["acme/tools"] })
    yield* (yield* OrganizationsRepo).ensure(ORG)
    yield* (yield* GithubAppsRepo).upsert(ORG, {
      githubAppId: APP_ID,
      slug: SLUG,
      clientId: "Iv1.pulls",
      clientSecret: Redacted.make("pulls-client-secret"),
      privateKey: Redacted.make(privateKey.export({ type: "pkcs8", format: "pem" }).toString()),
      webhookSecret: Redacted.make("pulls-webhook-secret")
    })
  })
)

const Pulls = Fixture.pipe(
  Layer.provideMerge(
    Layer.unwrap(
      Effect.map(FakeGithub, (fake) =>
        GitHubPulls.layer.pipe(
          Layer.provideMerge(GitHubApp.layer),
          Layer.provide(layerMemory),
          Layer.provide(Layer.succeed(AppConfig, AppConfig.of(testSettings({ githubApiUrl: new URL(fake.apiUrl) })))),
          Layer.provideMerge(layerTestServices)
        )
      )
    )
  ),
  Layer.provideMerge(FakeGithub.layer)
)

const pr = (number: number, repository = API): PullRef => ({ organizationId: ORG, repository, number })

/** A new file of `n` lines. */
const added = (n: number) => [`@@ -0,0 +1,${n} @@`, ...Array.from({ length: n }, (_, i) => `+line ${i + 1}`)].join("\n")

/**
 * Two hunks: new lines 10–16 and 41–43 (RIGHT), old lines 10–15 and 40–41 (LEFT); old line 12
 * was replaced by new lines 12–13.
 */
const APP_PATCH = [
  "@@ -10,6 +10,7 @@ export const app = () => {",
  "   const a = 1",
  "   const b = 2",
  "-  const c = 3",
  "+  const c = 4",
  "+  const d = 5",
  "   const e = 6",
  "   const f = 7",
  "   const g = 8",
  "@@ -40,2 +41,3 @@ export const tail = () => {",
  "   return a",
  "+  // done",
  " }"
].join("\n")

const REVIEW_FILES: ReadonlyArray<FakeGithubPullFile> = [
  { filename: "src/app.ts", status: "modified", additions: 3, deletions: 1, patch: APP_PATCH },
  { filename: "src/new.ts", status: "added", additions: 5, deletions: 0, patch: added(5) },
  { filename: "assets/logo.png", status: "added", additions: 0, deletions: 0 }
]

const openPull = (number: number, files: ReadonlyArray<FakeGithubPullFile> = REVIEW_FILES) =>
  Effect.map(FakeGithub, (fake) => {
    fake.setPull("acme/api", {
      number,
      head: { sha: HEAD, ref: `feature-${number}` },
      base: { sha: BASE, ref: "main" },
      title: `Feature ${number}`,
      body: `Describes feature ${number}`,
      draft: false,
      state: "open",
      user: { login: "dev", type: "User" },
      files
    })
    return fake
  })

/** The error a call fails with, after checking that nothing of it quotes an installation token. */
const failure = <A>(effect: Effect.Effect<A, GitHubAppError>) =>
  Effect.flip(effect).pipe(
    Effect.tap((error) =>
      Effect.sync(() => {
        assert.notInclude(error.message, "ghs_")
        assert.notInclude(String(error), "ghs_")
        assert.notInclude(JSON.stringify(error), "ghs_")
      })
    )
  )

const calls = (fake: FakeGithub["Service"], method: string, path: string) =>
  fake.requests.filter((request) => request.method === method && request.path === path)

layer(Pulls, { excludeTestServices: true })("GitHubPulls", (it) => {
  describe("reads", () => {
    it.effect(
      "files pages through 250 changed files in GitHub's order, keeping patches and a binary file's absence",
      () =>
        Effect.gen(function* () {
          const files = Array.from(
            { length: 250 },
            (_, i): FakeGithubPullFile =>
              i === 137
                ? { filename: "assets/logo-137.png", status: "added", additions: 0, deletions: 0 }
                : {
                    filename: `src/file-${String(i).padStart(3, "0")}.ts`,
                    status: i % 3 === 0 ? "modified" : "added",
                    additions: (i % 5) + 1,
                    deletions: i % 3 === 0 ? 1 : 0,
                    patch: added((i % 5) + 1)
                  }
          )
          const fake = yield* openPull(1, files)
          const pulls = yield* GitHubPulls

          const listed = yield* pulls.files(pr(1))

          assert.deepStrictEqual(
            listed,
            files.map(
              (file): ChangedFile => ({
                path: file.filename,
                status: file.status,
                patch: file.patch,
                additions: file.additions,
                deletions: file.deletions
              })
            )
          )
          assert.isUndefined(listed[137]?.patch)
          assert.strictEqual(listed[138]?.patch, added(4))
          const pages = calls(fake, "GET", "/api/v3/repos/acme/api/pulls/1/files")
          assert.deepStrictEqual(
            pages.map((request) => Object.fromEntries(new URLSearchParams(request.query))),
            [{ per_page: "100" }, { per_page: "100", page: "2" }, { per_page: "100", page: "3" }]
          )
          assert.isTrue(pages.every((request) => /^token ghs_[0-9a-f]{36}$/.test(request.authorization ?? "")))
        })
    )

    it.effect(
      "details reads title, head, base, description, draft, state and the changed files count; a missing description reads empty",
      () =>
        Effect.gen(function* () {
          const fake = yield* openPull(2)
          fake.setPull("acme/api", { number: 2, draft: true })
          const pulls = yield* GitHubPulls

          assert.deepStrictEqual(yield* pulls.details(pr(2)), {
            title: "Feature 2",
            headSha: HEAD,
            baseSha: BASE,
            body: "Describes feature 2",
            draft: true,
            state: "open",
            changedFiles: REVIEW_FILES.length
          })

          fake.setPull("acme/api", {
            number: 2,
            head: { sha: "c".repeat(40), ref: "feature-2" },
            title: "Feature 2, renamed",
            body: null,
            state: "closed"
          })
          assert.deepStrictEqual(yield* pulls.details(pr(2)), {
            title: "Feature 2, renamed",
            headSha: "c".repeat(40),
            baseSha: BASE,
            body: "",
            draft: true,
            state: "closed",
            changedFiles: REVIEW_FILES.length
          })
        })
    )

    it.effect("a pull request GitHub does not have fails NotFound, naming the endpoint and status", () =>
      Effect.gen(function* () {
        const pulls = yield* GitHubPulls
        const error = yield* failure(pulls.details(pr(404)))
        assert.strictEqual(error.reason, "NotFound")
        assert.strictEqual(error.message, "GitHub GET /pulls/{number} answered 404: Not Found")
        assert.strictEqual(error.status, 404)
      })
    )
  })

  describe("reviews", () => {
    it.effect(
      "createReview posts one COMMENT review with inline comments, a multi-line range included; reviewComments answers them with their ids",
      () =>
        Effect.gen(function* () {
          const fake = yield* openPull(3)
          const pulls = yield* GitHubPulls

          const reviewId = yield* pulls.createReview(pr(3), {
            commitId: HEAD,
            body: "Two findings <!-- bosun:review:run-3 -->",
            comments: [
              { path: "src/app.ts", body: "d is never read", line: 13, side: "RIGHT" },
              { path: "src/app.ts", body: "This block repeats itself", line: 14, startLine: 10, side: "RIGHT" },
              { path: "src/app.ts", body: "c was 3 for a reason", line: 12, side: "LEFT" },
              { path: "src/new.ts", body: "A range of one line is a line", line: 3, startLine: 3, side: "RIGHT" }
            ]
          })

          const [review, ...others] = fake.reviews("acme/api", 3)
          assert.deepStrictEqual(others, [])
          assert.strictEqual(review?.id, reviewId)
          assert.strictEqual(review?.body, "Two findings <!-- bosun:review:run-3 -->")
          assert.strictEqual(review?.commit_id, HEAD)
          assert.strictEqual(review?.event, "COMMENT")
          assert.strictEqual(review?.state, "COMMENTED")
          assert.deepStrictEqual(review?.user, { login: `${SLUG}[bot]`, id: review?.user.id, type: "Bot" })
          assert.deepStrictEqual(
            review?.comments.map(({ path, line, start_line, side, start_side, body, commit_id }) => ({
              path,
              line,
              start_line,
              side,
              start_side,
              body,
              commit_id
            })),
            [
              {
                path: "src/app.ts",
                line: 13,
                start_line: null,
                side: "RIGHT",
                start_side: null,
                body: "d is never read",
                commit_id: HEAD
              },
              {
                path: "src/app.ts",
                line: 14,
                start_line: 10,
                side: "RIGHT",
                start_side: "RIGHT",
                body: "This block repeats itself",
                commit_id: HEAD
              },
              {
                path: "src/app.ts",
                line: 12,
                start_line: null,
                side: "LEFT",
                start_side: null,
                body: "c was 3 for a reason",
                commit_id: HEAD
              },
              {
                path: "src/new.ts",
                line: 3,
                start_line: null,
                side: "RIGHT",
                start_side: null,
                body: "A range of one line is a line",
                commit_id: HEAD
              }
            ]
          )
          // What went over the wire: event COMMENT, and a range only where it spans lines.
          const [sent] = calls(fake, "POST", "/api/v3/repos/acme/api/pulls/3/reviews")
          const payload = JSON.parse(sent?.body ?? "{}") as { event: string; comments: Array<Record<string, unknown>> }
          assert.strictEqual(payload.event, "COMMENT")
          assert.deepStrictEqual(payload.comments[1], {
            path: "src/app.ts",
            body: "This block repeats itself",
            line: 14,
            side: "RIGHT",
            start_line: 10,
            start_side: "RIGHT"
          })
          assert.deepStrictEqual(payload.comments[3], {
            path: "src/new.ts",
            body: "A range of one line is a line",
            line: 3,
            side: "RIGHT"
          })

          const posted = yield* pulls.reviewComments(pr(3), reviewId)
          assert.deepStrictEqual(
            posted,
            (review?.comments ?? []).map((comment) => ({
              id: comment.id,
              path: comment.path,
              line: comment.line,
              body: comment.body
            }))
          )
          assert.strictEqual(new Set(posted.map((comment) => comment.id)).size, 4)
          assert.deepStrictEqual(
            fake
              .threads("acme/api", 3)
              .map((thread) => ({ isResolved: thread.isResolved, commentIds: thread.commentIds })),
            posted.map((comment) => ({ isResolved: false, commentIds: [comment.id] }))
          )
        })
    )

    it.effect(
      "createReview with a comment outside the diff is Refused with GitHub's 422 and its words, and posts nothing",
      () =>
        Effect.gen(function* () {
          const fake = yield* openPull(4)
          const pulls = yield* GitHubPulls
          const valid = { path: "src/app.ts", body: "fine", line: 13, side: "RIGHT" } as const
          const outside = [
            { path: "src/app.ts", body: "below the first hunk", line: 17, side: "RIGHT" },
            { path: "src/app.ts", body: "spans the gap between hunks", line: 41, startLine: 15, side: "RIGHT" },
            { path: "src/app.ts", body: "old line past the hunk", line: 16, side: "LEFT" },
            { path: "src/new.ts", body: "an added file has no old side", line: 2, side: "LEFT" },
            { path: "assets/logo.png", body: "a binary file has no lines", line: 1, side: "RIGHT" },
            { path: "src/missing.ts", body: "not part of the pull request", line: 1, side: "RIGHT" }
          ] as const

          for (const comment of outside) {
            const error = yield* failure(
              pulls.createReview(pr(4), { commitId: HEAD, body: "Findings", comments: [valid, comment] })
            )
            assert.strictEqual(error.reason, "Refused", comment.body)
            assert.strictEqual(error.status, 422, comment.body)
            assert.match(error.message, /^GitHub POST \/pulls\/\{number\}\/reviews answered 422: \S.+/, comment.body)
          }
          assert.deepStrictEqual(fake.reviews("acme/api", 4), [])
          assert.deepStrictEqual(fake.threads("acme/api", 4), [])
          assert.strictEqual(calls(fake, "POST", "/api/v3/repos/acme/api/pulls/4/reviews").length, outside.length)
        })
    )

    it.effect("findReview finds the review carrying the marker past the first page of 100, and None otherwise", () =>
      Effect.gen(function* () {
        const fake = yield* openPull(5)
        const pulls = yield* GitHubPulls
        const ids: Array<number> = []
        for (let i = 0; i < 101; i++) {
          ids.push(
            yield* pulls.createReview(pr(5), {
              commitId: HEAD,
              body: `Review ${i} <!-- bosun:run-${i} -->`,
              comments: []
            })
          )
        }

        assert.strictEqual(Option.getOrUndefined(yield* pulls.findReview(pr(5), "<!-- bosun:run-7 -->")), ids[7])
        assert.strictEqual(Option.getOrUndefined(yield* pulls.findReview(pr(5), "<!-- bosun:run-100 -->")), ids[100])
        assert.isTrue(Option.isNone(yield* pulls.findReview(pr(5), "<!-- bosun:run-101 -->")))
        // run-7 on page 1; run-100 on pages 1 and 2; no such marker: both pages and no more. Octokit
        // asks for the first page without a number and follows GitHub's `Link` to the next.
        assert.deepStrictEqual(
          calls(fake, "GET", "/api/v3/repos/acme/api/pulls/5/reviews").map((request) =>
            new URLSearchParams(request.query).get("page")
          ),
          [null, null, "2", null, "2"]
        )
      })
    )

    it.effect("reviewThreads lists every thread past 100 with its first comment's id; resolveThread resolves one", () =>
      Effect.gen(function* () {
        const fake = yield* openPull(6, [
          { filename: "src/big.ts", status: "added", additions: 101, deletions: 0, patch: added(101) }
        ])
        const pulls = yield* GitHubPulls
        const reviewId = yield* pulls.createReview(pr(6), {
          commitId: HEAD,
          body: "Many findings",
          comments: Array.from({ length: 101 }, (_, i) => ({
            path: "src/big.ts",
            body: `Finding on line ${i + 1}`,
            line: i + 1,
            side: "RIGHT" as const
          }))
        })
        const posted = yield* pulls.reviewComments(pr(6), reviewId)
        assert.deepStrictEqual(
          posted.map((comment) => comment.line),
          Array.from({ length: 101 }, (_, i) => i + 1)
        )
        const firstId = posted[0]?.id ?? 0
        const humanReply = fake.addReply("acme/api", 6, firstId, { login: "dev", body: "Fixed, I think" })

        const threads = yield* pulls.reviewThreads(pr(6))
        assert.deepStrictEqual(
          threads,
          fake.threads("acme/api", 6).map((thread) => ({
            id: thread.id,
            isResolved: false,
            commentIds: thread.commentIds.slice(0, 1)
          }))
        )
        assert.deepStrictEqual(
          threads.map((thread) => thread.commentIds),
          posted.map((comment) => [comment.id])
        )
        assert.deepStrictEqual(fake.threads("acme/api", 6)[0]?.commentIds, [firstId, humanReply])
        assert.strictEqual(new Set(threads.map((thread) => thread.id)).size, 101)
        const graphqlCalls = calls(fake, "POST", "/api/graphql")
        assert.strictEqual(graphqlCalls.length, 2, "two pages of 100")
        const variables = graphqlCalls.map(
          (request) => (JSON.parse(request.body) as { variables: Record<string, unknown> }).variables
        )
        assert.deepStrictEqual(variables[0], { owner: "acme", name: "api", number: 6, after: null })
        assert.deepStrictEqual(variables[1], { owner: "acme", name: "api", number: 6, after: variables[1]?.after })
        assert.isString(variables[1]?.after)
        assert.isTrue(graphqlCalls.every((request) => /^token ghs_/.test(request.authorization ?? "")))

        const target = threads[1]?.id ?? ""
        yield* pulls.resolveThread(pr(6), target)
        assert.deepStrictEqual(
          fake
            .threads("acme/api", 6)
            .filter((thread) => thread.isResolved)
            .map((thread) => thread.id),
          [target]
        )
        const again = yield* pulls.reviewThreads(pr(6))
        assert.deepStrictEqual(
          again.filter((thread) => thread.isResolved).map((thread) => thread.id),
          [target]
        )
      })
    )

    it.effect(
      "resolveThread of a thread GitHub does not know fails NotFound with GitHub's words (NOT_FOUND in errors, status 200)",
      () =>
        Effect.gen(function* () {
          const pulls = yield* GitHubPulls
          const error = yield* failure(pulls.resolveThread(pr(6), "PRRT_kwDOnothing"))
          assert.strictEqual(error.reason, "NotFound")
          assert.match(error.message, /^GitHub GraphQL resolveReviewThread answered: .+/)
          assert.notInclude(error.message, "ghs_")
        })
    )

    it.effect("replyToReviewComment adds the App's reply to the comment's thread; an unknown comment is NotFound", () =>
      Effect.gen(function* () {
        const fake = yield* openPull(11)
        const pulls = yield* GitHubPulls
        const reviewId = yield* pulls.createReview(pr(11), {
          commitId: HEAD,
          body: "One finding",
          comments: [{ path: "src/app.ts", body: "d is never read", line: 13, side: "RIGHT" }]
        })
        const [commented] = yield* pulls.reviewComments(pr(11), reviewId)
        const commentId = commented?.id ?? 0

        const replyId = yield* pulls.replyToReviewComment(pr(11), commentId, "Fixed in a later commit")

        assert.deepStrictEqual(fake.threads("acme/api", 11), [
          { id: fake.threads("acme/api", 11)[0]?.id ?? "", isResolved: false, commentIds: [commentId, replyId] }
        ])
        const reply = fake
          .reviews("acme/api", 11)
          .flatMap((review) => review.comments)
          .find((comment) => comment.id === replyId)
        assert.strictEqual(reply?.in_reply_to_id, commentId)
        assert.strictEqual(reply?.body, "Fixed in a later commit")
        assert.strictEqual(reply?.path, "src/app.ts")
        assert.strictEqual(reply?.line, 13)
        assert.strictEqual(reply?.user.login, `${SLUG}[bot]`)

        const error = yield* failure(pulls.replyToReviewComment(pr(11), 1, "Nobody to answer"))
        assert.strictEqual(error.reason, "NotFound")
        assert.strictEqual(error.message, "GitHub POST /pulls/{number}/comments/{id}/replies answered 404: Not Found")
      })
    )

    it.effect("GitHub's 502 on a read is retried within the call: 502, 502, then 200 answers", () =>
      Effect.gen(function* () {
        const fake = yield* openPull(31)
        const pulls = yield* GitHubPulls
        fake.failNext({ method: "GET", path: /\/pulls\/31$/, status: 502, times: 2 })

        const details = yield* pulls.details(pr(31))

        assert.strictEqual(details.headSha, HEAD)
        assert.strictEqual(calls(fake, "GET", "/api/v3/repos/acme/api/pulls/31").length, 3)
      })
    )

    it.effect(
      "a POST GitHub answers 502 fails Unavailable at once, not repeated (GitHub may have made it); the next call posts once",
      () =>
        Effect.gen(function* () {
          const fake = yield* openPull(12)
          const pulls = yield* GitHubPulls
          const review = { commitId: HEAD, body: "Retried review", comments: [] }
          fake.failNext({ method: "POST", path: /\/pulls\/12\/reviews$/, status: 502 })

          const error = yield* failure(pulls.createReview(pr(12), review))
          assert.strictEqual(error.reason, "Unavailable")
          assert.strictEqual(error.status, 502)
          assert.strictEqual(
            error.message,
            "GitHub POST /pulls/{number}/reviews answered 502: Bad Gateway - https://docs.github.com/rest"
          )
          assert.strictEqual(calls(fake, "POST", "/api/v3/repos/acme/api/pulls/12/reviews").length, 1)
          assert.deepStrictEqual(fake.reviews("acme/api", 12), [])

          const id = yield* pulls.createReview(pr(12), review)
          assert.deepStrictEqual(
            fake.reviews("acme/api", 12).map((posted) => [posted.id, posted.body]),
            [[id, "Retried review"]]
          )
        })
    )
  })

  describe("check runs, description and comments", () => {
    it.effect(
      "checkRun creates the check run once; the same external id answers the same id, another creates a second",
      () =>
        Effect.gen(function* () {
          const fake = yield* FakeGithub
          const pulls = yield* GitHubPulls
          const sha = "d".repeat(40)
          const check: CheckRunDraft = {
            name: "Bosun review",
            headSha: sha,
            conclusion: "failure",
            title: "Review failed",
            summary: "The model did not answer (status 503).",
            externalId: "run-8"
          }

          const id = yield* pulls.checkRun(ORG, API, check)
          assert.strictEqual(yield* pulls.checkRun(ORG, API, check), id)

          const runs = fake.checkRuns("acme/api")
          assert.deepStrictEqual(
            runs.map((run) => ({
              id: run.id,
              name: run.name,
              head_sha: run.head_sha,
              external_id: run.external_id,
              status: run.status,
              conclusion: run.conclusion,
              output: run.output,
              app: run.app
            })),
            [
              {
                id,
                name: "Bosun review",
                head_sha: sha,
                external_id: "run-8",
                status: "completed",
                conclusion: "failure",
                output: {
                  title: "Review failed",
                  summary: "The model did not answer (status 503).",
                  text: null,
                  annotations_count: 0
                },
                app: { id: APP_ID, slug: SLUG }
              }
            ]
          )
          assert.strictEqual(calls(fake, "POST", "/api/v3/repos/acme/api/check-runs").length, 1)
          assert.deepStrictEqual(
            calls(fake, "GET", `/api/v3/repos/acme/api/commits/${sha}/check-runs`).map((request) =>
              new URLSearchParams(request.query).get("check_name")
            ),
            ["Bosun review", "Bosun review"]
          )

          const second = yield* pulls.checkRun(ORG, API, { ...check, conclusion: "neutral", externalId: "run-9" })
          assert.notStrictEqual(second, id)
          assert.deepStrictEqual(
            fake.checkRuns("acme/api").map((run) => [run.id, run.external_id, run.conclusion]),
            [
              [id, "run-8", "failure"],
              [second, "run-9", "neutral"]
            ]
          )
          // A late retry of the first run still finds its own check run, though it is no longer the latest of its name.
          assert.strictEqual(yield* pulls.checkRun(ORG, API, check), id)
          assert.strictEqual(fake.checkRuns("acme/api").length, 2)
        })
    )

    it.effect("updateBody replaces the description, which details then reads", () =>
      Effect.gen(function* () {
        const fake = yield* openPull(9)
        const pulls = yield* GitHubPulls
        const body = "Describes feature 9\n\n<!-- bosun:summary -->\n## Bosun\nLooks fine.\n<!-- /bosun:summary -->"

        yield* pulls.updateBody(pr(9), body)

        assert.strictEqual(fake.pullBody("acme/api", 9), body)
        assert.strictEqual((yield* pulls.details(pr(9))).body, body)
        const [sent] = calls(fake, "PATCH", "/api/v3/repos/acme/api/pulls/9")
        assert.deepStrictEqual(JSON.parse(sent?.body ?? "{}"), { body })
      })
    )

    it.effect("comment posts a conversation comment as the App and answers its id", () =>
      Effect.gen(function* () {
        const fake = yield* openPull(10)
        const pulls = yield* GitHubPulls

        const id = yield* pulls.comment(pr(10), "Bosun could not review this pull request: the model did not answer.")

        assert.deepStrictEqual(
          fake.issueComments("acme/api", 10).map((comment) => ({
            id: comment.id,
            body: comment.body,
            login: comment.user.login,
            type: comment.user.type
          })),
          [
            {
              id,
              body: "Bosun could not review this pull request: the model did not answer.",
              login: `${SLUG}[bot]`,
              type: "Bot"
            }
          ]
        )
      })
    )
  })

  describe("reconciling and comparing", () => {
    it.effect("findComment finds the conversation comment carrying the marker, and None otherwise", () =>
      Effect.gen(function* () {
        yield* openPull(11)
        const pulls = yield* GitHubPulls
        yield* pulls.comment(pr(11), "A person's comment")
        const id = yield* pulls.comment(pr(11), "Too many files.\n\n<!-- bosun:effect:k-11 -->")

        assert.deepStrictEqual(yield* pulls.findComment(pr(11), "<!-- bosun:effect:k-11 -->"), Option.some(id))
        assert.deepStrictEqual(yield* pulls.findComment(pr(11), "<!-- bosun:effect:other -->"), Option.none())
      })
    )

    it.effect(
      "changedPaths lists what a push changed; an unknown base is NotFound and a comparison of 300 files or more is refused as incomplete",
      () =>
        Effect.gen(function* () {
          const fake = yield* openPull(12)
          const pulls = yield* GitHubPulls
          const next = "c".repeat(40)
          fake.setCompare("acme/api", HEAD, next, ["src/app.ts", "docs/readme.md"])

          assert.deepStrictEqual(yield* pulls.changedPaths(pr(12), HEAD, next), ["src/app.ts", "docs/readme.md"])

          const unknown = yield* failure(pulls.changedPaths(pr(12), "d".repeat(40), next))
          assert.strictEqual(unknown.reason, "NotFound")
          assert.strictEqual(unknown.status, 404)

          const many = "e".repeat(40)
          fake.setCompare(
            "acme/api",
            HEAD,
            many,
            Array.from({ length: 450 }, (_, i) => `src/file-${i}.ts`)
          )
          const incomplete = yield* failure(pulls.changedPaths(pr(12), HEAD, many))
          assert.strictEqual(incomplete.reason, "Unavailable")
          assert.include(incomplete.message, "300")
        })
    )
  })

  describe("rate limits", () => {
    it.effect(
      "a primary rate limit (403, X-RateLimit-Remaining: 0) is waited out until X-RateLimit-Reset, then the call succeeds",
      () =>
        Effect.gen(function* () {
          const fake = yield* openPull(41)
          const pulls = yield* GitHubPulls
          const reset = Math.ceil(Date.now() / 1000) + 1
          fake.failNext({
            method: "GET",
            path: /\/pulls\/41$/,
            status: 403,
            headers: { "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(reset) },
            message: "API rate limit exceeded for installation ID 777."
          })
          const started = Date.now()

          const details = yield* pulls.details(pr(41))

          assert.strictEqual(details.headSha, HEAD)
          assert.strictEqual(calls(fake, "GET", "/api/v3/repos/acme/api/pulls/41").length, 2)
          assert.isAtLeast(Date.now(), reset * 1000, "the second call waited for the reset")
          assert.isAtLeast(Date.now() - started, 500)
        })
    )

    it.effect("a secondary rate limit (429 with Retry-After) is waited out, then the write is made once", () =>
      Effect.gen(function* () {
        const fake = yield* openPull(42)
        const pulls = yield* GitHubPulls
        fake.failNext({
          method: "POST",
          path: /\/issues\/42\/comments$/,
          status: 429,
          headers: { "retry-after": "1" },
          message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
        })
        const started = Date.now()

        const id = yield* pulls.comment(pr(42), "After the wait")

        assert.isAtLeast(Date.now() - started, 1000, "Retry-After: 1 was honoured")
        assert.strictEqual(calls(fake, "POST", "/api/v3/repos/acme/api/issues/42/comments").length, 2)
        assert.deepStrictEqual(
          fake.issueComments("acme/api", 42).map((comment) => [comment.id, comment.body]),
          [[id, "After the wait"]]
        )
      })
    )

    it.effect(
      "a rate limit longer than a call waits fails RateLimited at once with GitHub's Retry-After, to be retried later",
      () =>
        Effect.gen(function* () {
          const fake = yield* openPull(43)
          const pulls = yield* GitHubPulls
          fake.failNext({
            method: "GET",
            path: /\/pulls\/43$/,
            status: 429,
            headers: { "retry-after": "600" },
            message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
          })

          const error = yield* failure(pulls.details(pr(43)))

          assert.strictEqual(error.reason, "RateLimited")
          assert.strictEqual(error.status, 429)
          assert.strictEqual(Duration.toSeconds(error.retryAfter ?? Duration.zero), 600)
          assert.match(
            error.message,
            /^GitHub GET \/pulls\/\{number\} answered 429: You have exceeded a secondary rate limit/
          )
          assert.strictEqual(calls(fake, "GET", "/api/v3/repos/acme/api/pulls/43").length, 1)
        })
    )

    it.effect("GitHub unreachable fails Unavailable saying so, with the connection's own error and no status", () =>
      Effect.gen(function* () {
        // A port something listened on a moment ago and nothing does now: the connection is refused.
        const closedPort = yield* Effect.promise(
          () =>
            new Promise<number>((resolve) => {
              const server = createServer()
              server.listen(0, "127.0.0.1", () => {
                const { port } = server.address() as AddressInfo
                server.close(() => resolve(port))
              })
            })
        )
        const client = GitHubClient.make({
          apiUrl: new URL(`http://127.0.0.1:${closedPort}/api/v3`),
          retryBase: Duration.millis(1),
          retries: 1,
          writeInterval: Duration.zero,
          maxRateLimitWait: Duration.seconds(1)
        })
        const error = yield* failure(
          client.call("test", "GET /app", undefined, (octokit, signal) =>
            octokit.request("GET /app", { request: { signal } })
          )
        )
        assert.strictEqual(error.reason, "Unavailable")
        assert.isUndefined(error.status)
        assert.match(error.message, /^GitHub unreachable: .*ECONNREFUSED/)
      })
    )
  })

  describe("refusals", () => {
    it.effect("a repository the App is not installed on fails NotInstalled before any pull request call", () =>
      Effect.gen(function* () {
        const fake = yield* FakeGithub
        const pulls = yield* GitHubPulls
        const other = { owner: "acme", name: "other" }

        const refused: ReadonlyArray<Effect.Effect<unknown, GitHubAppError>> = [
          pulls.files(pr(1, other)),
          pulls.details(pr(1, other)),
          pulls.createReview(pr(1, other), { commitId: HEAD, body: "x", comments: [] }),
          pulls.reviewThreads(pr(1, other)),
          pulls.comment(pr(1, other), "x")
        ]
        for (const call of refused) {
          const error = yield* failure(call)
          assert.strictEqual(error.reason, "NotInstalled")
          assert.strictEqual(error.message, "The GitHub App is not installed on acme/other")
        }
        assert.deepStrictEqual(
          fake.requests.filter(
            (request) => request.path.startsWith("/api/v3/repos/acme/other/") && !request.path.endsWith("/installation")
          ),
          []
        )
      })
    )

    it.effect(
      "the fake answers 401 without an installation token and 404 with one of an installation that does not reach the repository",
      () =>
        Effect.gen(function* () {
          const fake = yield* FakeGithub
          const app = yield* GitHubApp
          yield* openPull(13)
          const foreign = Redacted.value(yield* app.installationToken(ORG, { owner: "acme", name: "tools" }))
          const own = Redacted.value(yield* app.installationToken(ORG, API))
          const get = (authorization: string | undefined) =>
            Effect.promise(async () => {
              const response = await fetch(`${fake.apiUrl}/repos/acme/api/pulls/13`, {
                headers: authorization === undefined ? {} : { authorization }
              })
              return { status: response.status, json: (await response.json()) as Record<string, unknown> }
            })

          assert.deepStrictEqual(yield* get(undefined), { status: 401, json: { message: "Bad credentials" } })
          assert.deepStrictEqual(yield* get("token ghs_forged"), { status: 401, json: { message: "Bad credentials" } })
          assert.deepStrictEqual(yield* get(`token ${foreign}`), { status: 404, json: { message: "Not Found" } })
          const ok = yield* get(`token ${own}`)
          assert.strictEqual(ok.status, 200)
          assert.strictEqual(ok.json.number, 13)
        })
    )
  })
})
