/**
 * The fake Linear driven by the real `@linear/sdk` LinearClient: comments created under a given
 * id (a second create with it refused), found again by id and by issue, an issue moved to another
 * workflow state and read back, the viewer, and refusals and scripted failures surfacing as the
 * SDK's own error classes (`AuthenticationLinearError`, `InvalidInputLinearError`,
 * `RatelimitedLinearError` with `retryAfter`, `InternalLinearError`).
 */
import { createHmac, randomUUID } from "node:crypto"
import { assert, layer } from "@effect/vitest"
import {
  AuthenticationLinearError,
  InternalLinearError,
  InvalidInputLinearError,
  LinearClient,
  LinearError,
  LinearErrorType,
  RatelimitedLinearError
} from "@linear/sdk"
import { Effect, Layer } from "effect"
import { FakeLinear, linearSignature } from "../src/FakeLinear.ts"

const API_KEY = "lin_api_fake_0123456789"
const OAUTH_TOKEN = "lin_oauth_fake_0123456789"
const ISSUE_ID = "9cfb482a-81e3-4154-b5b9-2c805e70a02d"

const Fixture = Layer.effectDiscard(
  Effect.map(FakeLinear, (fake) => {
    fake.addToken(API_KEY)
    fake.addToken(OAUTH_TOKEN)
    fake.setViewer({ id: "user-bosun", name: "Bosun Bot", displayName: "bosun" })
    fake.addWorkflowState({ id: "state-todo", name: "Todo" })
    fake.addWorkflowState({ id: "state-review", name: "In Review", type: "started" })
    fake.addIssue({
      id: ISSUE_ID,
      identifier: "ENG-42",
      title: "Flaky checkout test",
      description: "Fails one run in ten.",
      stateId: "state-todo"
    })
  })
).pipe(Layer.provideMerge(FakeLinear.layer))

/** The client and a fresh fake (calls, failures and comments forgotten, issues as seeded). */
const setup = Effect.map(FakeLinear, (fake) => {
  fake.reset()
  return { fake, linear: new LinearClient({ apiKey: API_KEY, apiUrl: fake.apiUrl }) }
})

const call = <A>(run: () => Promise<A>) => Effect.promise(run)
/** The error a client call rejects with. */
const rejection = <A>(run: () => Promise<A>) =>
  Effect.flip(Effect.tryPromise({ try: run, catch: (error: unknown) => error }))

layer(Fixture, { excludeTestServices: true })("FakeLinear", (it) => {
  it.effect("createComment under a given id, found again by id and by issue; the same id again is refused", () =>
    Effect.gen(function* () {
      const { fake, linear } = yield* setup
      const id = randomUUID()
      const created = yield* call(() =>
        linear.createComment({ id, issueId: ISSUE_ID, body: "Bosun is reviewing this." })
      )
      assert.strictEqual(created.success, true)
      assert.strictEqual(created.commentId, id)
      assert.isNumber(created.lastSyncId)
      const comment = yield* call(async () => {
        const fetched = await created.comment
        if (fetched === undefined) throw new Error("no comment")
        return fetched
      })
      assert.strictEqual(comment.body, "Bosun is reviewing this.")
      assert.strictEqual(comment.issueId, ISSUE_ID)

      const byId = yield* call(() => linear.comments({ filter: { id: { eq: id } } }))
      assert.deepStrictEqual(
        byId.nodes.map((node) => [node.id, node.body, node.issueId, node.userId]),
        [[id, "Bosun is reviewing this.", ISSUE_ID, "user-bosun"]]
      )
      assert.strictEqual(byId.pageInfo.hasNextPage, false)
      assert.instanceOf(byId.nodes[0]?.createdAt, Date)

      const second = yield* call(() => linear.createComment({ issueId: ISSUE_ID, body: "Second" }))
      const byIssue = yield* call(() => linear.comments({ filter: { issue: { id: { eq: ISSUE_ID } } } }))
      assert.deepStrictEqual(
        byIssue.nodes.map((node) => node.id),
        [id, second.commentId]
      )
      assert.strictEqual((yield* call(() => linear.comments({ filter: { id: { eq: "missing" } } }))).nodes.length, 0)

      const duplicate = yield* rejection(() => linear.createComment({ id, issueId: ISSUE_ID, body: "Again" }))
      assert.instanceOf(duplicate, InvalidInputLinearError)
      assert.include((duplicate as LinearError).message, "Entity already exists")
      assert.strictEqual((duplicate as LinearError).status, 200)

      const nowhere = yield* rejection(() => linear.createComment({ issueId: randomUUID(), body: "Lost" }))
      assert.instanceOf(nowhere, InvalidInputLinearError)
      assert.include((nowhere as LinearError).message, "Entity not found")

      assert.deepStrictEqual(
        fake.comments(ISSUE_ID).map((stored) => [stored.id, stored.body]),
        [
          [id, "Bosun is reviewing this."],
          [second.commentId, "Second"]
        ]
      )
      const recorded = fake.calls("commentCreate")[0]
      assert.deepStrictEqual(recorded?.variables, {
        input: { id, issueId: ISSUE_ID, body: "Bosun is reviewing this." }
      })
      assert.strictEqual(recorded?.headers.authorization, API_KEY)
      assert.strictEqual(recorded?.status, 200)
    })
  )

  it.effect("updateIssue moves the issue; issue(id) and its state read back", () =>
    Effect.gen(function* () {
      const { fake, linear } = yield* setup
      const before = yield* call(() => linear.issue(ISSUE_ID))
      assert.strictEqual(before.identifier, "ENG-42")
      assert.strictEqual(before.title, "Flaky checkout test")
      assert.strictEqual(before.description, "Fails one run in ten.")
      assert.strictEqual(before.stateId, "state-todo")
      assert.strictEqual(before.number, 42)
      assert.strictEqual(before.url, "https://linear.app/fake/issue/eng-42")

      const updated = yield* call(() =>
        linear.updateIssue(ISSUE_ID, { stateId: "state-review", assigneeId: "user-bosun" })
      )
      assert.strictEqual(updated.success, true)
      assert.strictEqual(updated.issueId, ISSUE_ID)
      assert.deepStrictEqual(
        { stateId: fake.issue(ISSUE_ID)?.stateId, assigneeId: fake.issue(ISSUE_ID)?.assigneeId },
        { stateId: "state-review", assigneeId: "user-bosun" }
      )

      const after = yield* call(() => linear.issue(ISSUE_ID))
      assert.strictEqual(after.stateId, "state-review")
      assert.strictEqual(after.assigneeId, "user-bosun")
      const state = yield* call(async () => after.state)
      assert.strictEqual(state?.name, "In Review")
      assert.strictEqual(state?.type, "started")

      // The identifier finds the issue too; an unknown one is refused.
      assert.strictEqual((yield* call(() => linear.issue("ENG-42"))).id, ISSUE_ID)
      const unknown = yield* rejection(() => linear.issue("ENG-404"))
      assert.instanceOf(unknown, InvalidInputLinearError)
      assert.include((unknown as LinearError).message, "Entity not found")
      const unknownUpdate = yield* rejection(() => linear.updateIssue(randomUUID(), { stateId: "state-todo" }))
      assert.instanceOf(unknownUpdate, InvalidInputLinearError)
    })
  )

  it.effect("viewer answers the registered user, to an API key and to an OAuth token", () =>
    Effect.gen(function* () {
      const { fake, linear } = yield* setup
      const viewer = yield* call(() => linear.viewer)
      assert.deepStrictEqual(
        [viewer.id, viewer.name, viewer.displayName, viewer.isMe],
        ["user-bosun", "Bosun Bot", "bosun", true]
      )
      const oauth = new LinearClient({ accessToken: OAUTH_TOKEN, apiUrl: fake.apiUrl })
      assert.strictEqual((yield* call(() => oauth.viewer)).id, "user-bosun")
      assert.strictEqual(fake.calls("viewer")[1]?.headers.authorization, `Bearer ${OAUTH_TOKEN}`)
    })
  )

  it.effect("an unknown token is an AuthenticationLinearError", () =>
    Effect.gen(function* () {
      const { fake } = yield* setup
      for (const stranger of [
        new LinearClient({ apiKey: "lin_api_stranger", apiUrl: fake.apiUrl }),
        new LinearClient({ accessToken: "stranger", apiUrl: fake.apiUrl })
      ]) {
        const error = yield* rejection(() => stranger.viewer)
        assert.instanceOf(error, AuthenticationLinearError)
        assert.strictEqual((error as LinearError).type, LinearErrorType.AuthenticationError)
        assert.strictEqual((error as LinearError).status, 400)
      }
      const refusedComment = yield* rejection(() =>
        new LinearClient({ apiKey: "lin_api_stranger", apiUrl: fake.apiUrl }).createComment({
          issueId: ISSUE_ID,
          body: "Sneaky"
        })
      )
      assert.instanceOf(refusedComment, AuthenticationLinearError)
      assert.deepStrictEqual(fake.comments(ISSUE_ID), [])
    })
  )

  it.effect("scripted failures: rate limit with retryAfter, a 500, a dropped connection, then calls go through", () =>
    Effect.gen(function* () {
      const { fake, linear } = yield* setup
      fake.failNext("commentCreate", [{ status: 429, retryAfter: 30 }, { status: 500 }, { drop: true }])
      const create = () => linear.createComment({ issueId: ISSUE_ID, body: "Eventually" })

      const limited = yield* rejection(create)
      assert.instanceOf(limited, RatelimitedLinearError)
      assert.strictEqual((limited as RatelimitedLinearError).type, LinearErrorType.Ratelimited)
      assert.strictEqual((limited as RatelimitedLinearError).retryAfter, 30)
      assert.strictEqual((limited as RatelimitedLinearError).requestsRemaining, 0)
      assert.strictEqual((limited as RatelimitedLinearError).status, 429)

      const broken = yield* rejection(create)
      assert.instanceOf(broken, InternalLinearError)
      assert.strictEqual((broken as LinearError).status, 500)

      const dropped = yield* rejection(create)
      assert.instanceOf(dropped, LinearError)
      assert.isUndefined((dropped as LinearError).status)

      // Nothing was created by the failed calls; other operations were never affected.
      assert.deepStrictEqual(fake.comments(ISSUE_ID), [])
      assert.strictEqual((yield* call(() => linear.viewer)).id, "user-bosun")
      assert.strictEqual((yield* call(create)).success, true)
      assert.deepStrictEqual(
        fake.calls("commentCreate").map((recorded) => recorded.status),
        [429, 500, "dropped", 200]
      )
      assert.strictEqual(fake.comments(ISSUE_ID).length, 1)

      // Without a Retry-After header, retryAfter is unknown.
      fake.failNext("viewer", [{ status: 429 }])
      const unspecified = yield* rejection(() => linear.viewer)
      assert.instanceOf(unspecified, RatelimitedLinearError)
      assert.isUndefined((unspecified as RatelimitedLinearError).retryAfter)
    })
  )

  it.effect("linearSignature is the hex HMAC-SHA256 of the raw body", () =>
    Effect.sync(() => {
      const body = '{"action":"create"}'
      assert.strictEqual(
        linearSignature("whsec", body),
        "0b9f570fcb4c88d5e3b3b4e2221805cb9ce2b61b4b973242d7c74f925829a30e"
      )
      assert.strictEqual(linearSignature("another", body), createHmac("sha256", "another").update(body).digest("hex"))
    })
  )
})
