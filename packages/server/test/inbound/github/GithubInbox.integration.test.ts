/**
 * The GitHub inbox consumer behind the real webhook route, the outbox and the Postgres
 * queue: installations link the organization and bring its repositories (read back through the
 * repositories API), installation_repositories adds and removes them, an uninstall makes them all
 * unavailable, pull_request events keep the pull-request list (the list item of docs/interface.md,
 * through the API) in step with OPEN / CLOSED / MERGED; a payload missing what its event needs is
 * recorded as ignored with the reason and changes nothing; a delivery is applied once however often
 * it comes.
 */
import type { PullRequestListItem, Repository } from "@bosun/domain"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { OrganizationsRepo } from "../../../src/features/identity/OrganizationsRepo.ts"
import { GithubDeliveriesRepo } from "../../../src/inbound/github/GithubDeliveriesRepo.ts"
import { makeGithubInboxHandler } from "../../../src/inbound/github/GithubInbox.ts"
import { configured, deliver, processed } from "../../support/GithubDeliveries.ts"
import { signIn } from "../../support/Identity.ts"
import { layerTestServer, logsNamed, request, testSettings } from "../../support/TestServer.ts"

const ACCOUNT = { id: 31337, login: "acme" }

const installation = (action: string, repositories: ReadonlyArray<{ id: number; name: string }>) =>
  JSON.stringify({
    action,
    installation: { id: 91, account: { ...ACCOUNT, type: "Organization" } },
    repositories: repositories.map((repository) => ({
      ...repository,
      full_name: `acme/${repository.name}`,
      private: true
    })),
    sender: { id: 1, login: "octocat" }
  })

const installationRepositories = (
  added: ReadonlyArray<{ id: number; name: string }>,
  removed: ReadonlyArray<{ id: number; name: string }>
) =>
  JSON.stringify({
    action: added.length > 0 ? "added" : "removed",
    installation: { id: 91, account: ACCOUNT },
    repository_selection: "selected",
    repositories_added: added.map((r) => ({ ...r, full_name: `acme/${r.name}` })),
    repositories_removed: removed.map((r) => ({ ...r, full_name: `acme/${r.name}` }))
  })

const pullRequest = (
  action: string,
  pr: { number: number; title: string; state: "open" | "closed"; merged?: boolean }
) =>
  JSON.stringify({
    action,
    number: pr.number,
    pull_request: {
      number: pr.number,
      title: pr.title,
      state: pr.state,
      draft: false,
      merged: pr.merged ?? false,
      user: { login: "dev-anna" },
      head: { sha: "c".repeat(40) },
      base: { sha: "d".repeat(40) }
    },
    repository: { id: 501, name: "api", owner: ACCOUNT, default_branch: "trunk" },
    installation: { id: 91 }
  })

let deliveries = 0
const send = (event: string, body: string, id = `inbox-${deliveries++}`) =>
  Effect.map(deliver({ id, event, body }), (response) => {
    assert.strictEqual(response.status, 202, response.text)
    return id
  })

const listRepositories = (org: string, cookie: string) =>
  Effect.map(request(`/api/v1/organizations/${org}/repositories`, { headers: { cookie } }), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return (response.json as { data: ReadonlyArray<Repository> }).data
  })

const listPullRequests = (org: string, cookie: string) =>
  Effect.map(request(`/api/v1/organizations/${org}/pull-requests`, { headers: { cookie } }), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return (response.json as { data: ReadonlyArray<PullRequestListItem> }).data
  })

// The inbox's own writes are what these tests look at: with no review lane the reviews it queues
// stay QUEUED (with one, the Scheduler could claim and fail them first: these Apps' keys sign nothing).
const defaults = testSettings()
const settings = {
  cluster: { ...defaults.cluster, scheduler: { ...defaults.cluster.scheduler, lanes: { AGENT: 4, REVIEW: 0 } } }
}

layer(layerTestServer({ settings }), { excludeTestServices: true })("the GitHub inbox", (it) => {
  it.effect(
    "installation events link the organization set up for their account and keep its repositories and their availability",
    () =>
      Effect.gen(function* () {
        yield* configured("inbox-org", null)
        // The operator set it up for the account (`bosun organizations link`), its id not yet known.
        yield* (yield* OrganizationsRepo).setGithubAccount("inbox-org", { login: "ACME", id: null })
        const member = yield* signIn("inbox-member", [["inbox-org", "MEMBER"]])
        const created = yield* send(
          "installation",
          installation("created", [
            { id: 501, name: "api" },
            { id: 502, name: "web" }
          ])
        )
        assert.isNull(yield* processed(created))
        const sql = yield* SqlClient.SqlClient
        const [org] = yield* sql<{ github_account_id: string; login: string }>`
          SELECT github_account_id::text AS github_account_id, login FROM organizations WHERE id = 'inbox-org'`
        assert.deepStrictEqual(org, { github_account_id: "31337", login: "acme" })
        const listed = yield* listRepositories("inbox-org", member.cookie)
        assert.deepStrictEqual(
          listed.map((r) => [r.owner, r.name, r.available, r.enabled]),
          [
            ["acme", "api", true, true],
            ["acme", "web", true, true]
          ]
        )

        const changed = yield* send(
          "installation_repositories",
          installationRepositories([{ id: 503, name: "docs" }], [])
        )
        assert.isNull(yield* processed(changed))
        const removed = yield* send(
          "installation_repositories",
          installationRepositories([], [{ id: 502, name: "web" }])
        )
        assert.isNull(yield* processed(removed))
        assert.deepStrictEqual(
          (yield* listRepositories("inbox-org", member.cookie)).map((r) => [r.name, r.available]),
          [
            ["api", true],
            ["docs", true],
            ["web", false]
          ]
        )

        const deleted = yield* send("installation", installation("deleted", []))
        assert.isNull(yield* processed(deleted))
        assert.deepStrictEqual(
          (yield* listRepositories("inbox-org", member.cookie)).map((r) => r.available),
          [false, false, false]
        )
        // Reinstalled: the repositories it lists come back.
        const again = yield* send("installation", installation("created", [{ id: 501, name: "api" }]))
        assert.isNull(yield* processed(again))
        assert.deepStrictEqual(
          (yield* listRepositories("inbox-org", member.cookie)).map((r) => [r.name, r.available]),
          [
            ["api", true],
            ["docs", false],
            ["web", false]
          ]
        )
      }),
    40_000
  )

  it.effect("pull_request events keep the pull-request list in step, applied once per delivery", () =>
    Effect.gen(function* () {
      yield* configured("inbox-prs", ACCOUNT.id + 1)
      const member = yield* signIn("inbox-prs-member", [["inbox-prs", "MEMBER"]])
      const account = { id: ACCOUNT.id + 1, login: "acme-two" }
      const body = (action: string, pr: Parameters<typeof pullRequest>[1]) =>
        pullRequest(action, pr).replaceAll(`"id":${ACCOUNT.id},"login":"acme"`, `"id":${account.id},"login":"acme-two"`)
      const opened = yield* send(
        "pull_request",
        body("opened", { number: 12, title: "Parse the config", state: "open" })
      )
      // The same delivery again, before and after it was processed: applied once.
      yield* send("pull_request", body("opened", { number: 12, title: "Parse the config", state: "open" }), opened)
      assert.isNull(yield* processed(opened))
      const [pr] = yield* listPullRequests("inbox-prs", member.cookie)
      assert.isDefined(pr)
      assert.strictEqual(pr?.number, 12)
      assert.strictEqual(pr?.title, "Parse the config")
      assert.strictEqual(pr?.author_login, "dev-anna")
      assert.strictEqual(pr?.state, "OPEN")
      assert.strictEqual(pr?.repository, "acme-two/api")
      assert.strictEqual(pr?.review_status, "QUEUED")
      assert.deepStrictEqual([pr?.open_findings, pr?.resolved_findings], [0, 0])

      const edited = yield* send(
        "pull_request",
        body("edited", { number: 12, title: "Parse the config file", state: "open" })
      )
      assert.isNull(yield* processed(edited))
      const merged = yield* send(
        "pull_request",
        body("closed", { number: 12, title: "Parse the config file", state: "closed", merged: true })
      )
      assert.isNull(yield* processed(merged))
      const closed = yield* send("pull_request", body("closed", { number: 13, title: "Drop it", state: "closed" }))
      assert.isNull(yield* processed(closed))
      const listed = yield* listPullRequests("inbox-prs", member.cookie)
      assert.deepStrictEqual(listed.map((item) => [item.number, item.title, item.state]).sort(), [
        [12, "Parse the config file", "MERGED"],
        [13, "Drop it", "CLOSED"]
      ])
      const sql = yield* SqlClient.SqlClient
      const [repository] = yield* sql<{ default_branch: string; github_repository_id: string }>`
        SELECT default_branch, github_repository_id::text AS github_repository_id FROM repositories
        WHERE organization_id = 'inbox-prs'`
      assert.deepStrictEqual(repository, { default_branch: "trunk", github_repository_id: "501" })
    })
  )

  it.effect("a payload missing what its event needs is recorded as ignored, with the reason, and changes nothing", () =>
    Effect.gen(function* () {
      yield* configured("inbox-bad", ACCOUNT.id + 2)
      const id = yield* send(
        "pull_request",
        JSON.stringify({
          action: "opened",
          number: 3,
          repository: { id: 9, owner: { id: ACCOUNT.id + 2, login: "x" } }
        })
      )
      const reason = yield* processed(id)
      assert.isNotNull(reason)
      assert.include(reason ?? "", "the pull_request payload is not what GitHub documents")
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql`SELECT 1 FROM pull_requests WHERE organization_id = 'inbox-bad'`
      assert.strictEqual(rows.length, 0)
    })
  )

  it.effect(
    "deliveries of one pull request are applied in arrival order whatever order their wake-ups come in; a wake-up naming only the delivery still applies it",
    () =>
      Effect.gen(function* () {
        yield* configured("inbox-order", ACCOUNT.id + 7)
        const member = yield* signIn("inbox-order-member", [["inbox-order", "MEMBER"]])
        const deliveries = yield* GithubDeliveriesRepo
        const sql = yield* SqlClient.SqlClient
        const account = { id: ACCOUNT.id + 7, login: "acme-three" }
        const payload = (action: string, pr: Parameters<typeof pullRequest>[1]) =>
          JSON.parse(
            pullRequest(action, pr).replaceAll(
              `"id":${ACCOUNT.id},"login":"acme"`,
              `"id":${account.id},"login":"acme-three"`
            )
          ) as Record<string, unknown>
        // Recorded as the webhook records them, in this order, with no wake-up sent yet.
        const record = (deliveryId: string, action: string, pr: Parameters<typeof pullRequest>[1]) =>
          sql.withTransaction(
            deliveries.record(
              {
                deliveryId,
                organizationId: "inbox-order",
                event: "pull_request",
                action,
                installationId: 91,
                payload: payload(action, pr),
                subject: "pr:501:21"
              },
              null
            )
          )
        yield* record("order-opened", "opened", { number: 21, title: "Cache the parser", state: "open" })
        yield* record("order-closed", "closed", { number: 21, title: "Cache the parser", state: "closed" })
        const handler = yield* makeGithubInboxHandler
        const first = { deliveries: 1, last: false }
        const before = (yield* logsNamed("github_delivery_processed")).length
        // The later delivery's wake-up is handled first: it applies the earlier one before itself.
        yield* handler.handle({ organization_id: "inbox-order", delivery_id: "order-closed" }, first)
        yield* handler.handle({ organization_id: "inbox-order", delivery_id: "order-opened" }, first)
        const applied = (yield* logsNamed("github_delivery_processed"))
          .slice(before)
          .map((record) => [record.delivery_id, record.applied_before ?? null])
        assert.deepStrictEqual(applied, [
          ["order-opened", "order-closed"],
          ["order-closed", null]
        ])
        const [pr] = yield* listPullRequests("inbox-order", member.cookie)
        assert.deepStrictEqual([pr?.number, pr?.state], [21, "CLOSED"])
        const [review] = yield* sql<{ status: string; cancel_requested: boolean }>`
          SELECT j.status, j.cancel_requested_at IS NOT NULL AS cancel_requested
          FROM jobs j JOIN workflow_runs r ON r.id = j.run_id
          WHERE r.organization_id = 'inbox-order' AND r.pull_request_number = 21`
        // The review the opening queued was asked to stop by the closing (the Scheduler may have dropped it already).
        assert.isTrue(review?.cancel_requested)
        assert.include(["QUEUED", "CANCELLED"], review?.status)

        // A wake-up written before the pointer named the organization carries only the delivery's id.
        yield* record("order-reopened", "reopened", { number: 21, title: "Cache the parser", state: "open" })
        yield* handler.handle({ delivery_id: "order-reopened" }, first)
        assert.strictEqual(yield* processed("order-reopened"), "no review: review_on_reopen is off")
        const [reopened] = yield* listPullRequests("inbox-order", member.cookie)
        assert.strictEqual(reopened?.state, "OPEN")
        // An unknown delivery, with or without its organization, is nothing to do.
        yield* handler.handle({ delivery_id: "order-unknown" }, first)
        yield* handler.handle({ organization_id: "inbox-order", delivery_id: "order-unknown" }, first)
      }),
    40_000
  )
})
