/**
 * The fake Slack driven by the real `@slack/web-api` WebClient (no retries, rate limits
 * rejected): a threaded conversation with message metadata read back as Slack's reads show it,
 * edits, Slack's refusals (`invalid_auth`, `channel_not_found`, `no_text`, `message_not_found`,
 * `unknown_method`), scripted failures surfacing as the client's own errors, and the Events API
 * signature checked against Slack's documented example.
 */
import { assert, layer } from "@effect/vitest"
import {
  ErrorCode,
  LogLevel,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebAPIRequestError,
  WebClient
} from "@slack/web-api"
import { Effect, Layer } from "effect"
import { FakeSlack, signedSlackHeaders, slackSignature } from "../src/FakeSlack.ts"

const TOKEN = "xoxb-fake-workspace-token"
const TEAM_ID = "T0FAKE01"
const BOT_USER_ID = "U0BOSUN1"
const CHANNEL = "C0REVIEWS"

const Fixture = Layer.effectDiscard(
  Effect.map(FakeSlack, (fake) =>
    fake.addWorkspace({ token: TOKEN, teamId: TEAM_ID, teamName: "Acme Corp", botUserId: BOT_USER_ID })
  )
).pipe(Layer.provideMerge(FakeSlack.layer))

const clientOf = (fake: FakeSlack["Service"], token = TOKEN) =>
  new WebClient(token, {
    slackApiUrl: fake.apiUrl,
    rejectRateLimitedCalls: true,
    retryConfig: { retries: 0 },
    // The client warns of a dropped connection and a post without text, both on purpose here.
    logLevel: LogLevel.ERROR
  })

/** The client and a fresh fake (messages, calls and scripted failures forgotten). */
const setup = Effect.map(FakeSlack, (fake) => {
  fake.reset()
  return { fake, slack: clientOf(fake) }
})

const call = <A>(run: () => Promise<A>) => Effect.promise(run)
/** The error a client call rejects with. */
const rejection = <A>(run: () => Promise<A>) =>
  Effect.flip(Effect.tryPromise({ try: run, catch: (error: unknown) => error }))

layer(Fixture, { excludeTestServices: true })("FakeSlack", (it) => {
  it.effect("auth.test answers the token's workspace and bot user", () =>
    Effect.gen(function* () {
      const { slack } = yield* setup
      const answer = yield* call(() => slack.auth.test())
      assert.strictEqual(answer.ok, true)
      assert.strictEqual(answer.team_id, TEAM_ID)
      assert.strictEqual(answer.team, "Acme Corp")
      assert.strictEqual(answer.user_id, BOT_USER_ID)
      assert.strictEqual(answer.bot_id, "B0BOSUN1")
      assert.strictEqual(answer.url, "https://acme-corp.slack.com/")
    })
  )

  it.effect("a threaded conversation with metadata reads back oldest first, metadata only when asked for", () =>
    Effect.gen(function* () {
      const { fake, slack } = yield* setup
      const parent = yield* call(() =>
        slack.chat.postMessage({
          channel: CHANNEL,
          text: "Review of acme/api#7",
          metadata: { event_type: "bosun_review", event_payload: { run: "run-1" } }
        })
      )
      assert.strictEqual(parent.ok, true)
      assert.strictEqual(parent.channel, CHANNEL)
      assert.match(parent.ts ?? "", /^\d{10}\.\d{6}$/)
      assert.strictEqual(parent.message?.user, BOT_USER_ID)
      const parentTs = parent.ts ?? ""

      const replies: Array<string> = []
      for (const index of [1, 2]) {
        const reply = yield* call(() =>
          slack.chat.postMessage({
            channel: CHANNEL,
            thread_ts: parentTs,
            text: `Finding ${index}`,
            blocks: [{ type: "section", text: { type: "mrkdwn", text: `*Finding ${index}*` } }],
            metadata: { event_type: "bosun_finding", event_payload: { finding: index } }
          })
        )
        replies.push(reply.ts ?? "")
      }
      const other = yield* call(() => slack.chat.postMessage({ channel: CHANNEL, text: "Another review" }))
      // Every ts is above the previous one.
      const all = [parentTs, ...replies, other.ts ?? ""]
      assert.deepStrictEqual(
        [...all].sort((a, b) => Number(a) - Number(b)),
        all
      )
      assert.strictEqual(new Set(all).size, 4)

      const thread = yield* call(() =>
        slack.conversations.replies({ channel: CHANNEL, ts: parentTs, include_all_metadata: true })
      )
      assert.strictEqual(thread.has_more, false)
      assert.deepStrictEqual(
        thread.messages?.map((message) => ({
          ts: message.ts,
          text: message.text,
          user: message.user,
          thread_ts: message.thread_ts,
          metadata: message.metadata
        })),
        [
          {
            ts: parentTs,
            text: "Review of acme/api#7",
            user: BOT_USER_ID,
            thread_ts: parentTs,
            metadata: { event_type: "bosun_review", event_payload: { run: "run-1" } }
          },
          ...replies.map((ts, index) => ({
            ts,
            text: `Finding ${index + 1}`,
            user: BOT_USER_ID,
            thread_ts: parentTs,
            metadata: { event_type: "bosun_finding", event_payload: { finding: index + 1 } }
          }))
        ]
      )
      assert.strictEqual(thread.messages?.[0]?.reply_count, 2)
      assert.deepStrictEqual<unknown>(thread.messages?.[1]?.blocks, [
        { type: "section", text: { type: "mrkdwn", text: "*Finding 1*" } }
      ])

      const plain = yield* call(() => slack.conversations.replies({ channel: CHANNEL, ts: parentTs }))
      assert.isTrue(plain.messages?.every((message) => message.metadata === undefined))

      // A reply to a reply joins the parent's thread.
      yield* call(() => slack.chat.postMessage({ channel: CHANNEL, thread_ts: replies[0] ?? "", text: "Nested" }))
      const stored = fake.messages(CHANNEL)
      assert.deepStrictEqual(
        stored.map((message) => [message.text, message.thread_ts]),
        [
          ["Review of acme/api#7", undefined],
          ["Finding 1", parentTs],
          ["Finding 2", parentTs],
          ["Another review", undefined],
          ["Nested", parentTs]
        ]
      )

      const history = yield* call(() => slack.conversations.history({ channel: CHANNEL, include_all_metadata: true }))
      assert.deepStrictEqual(
        history.messages?.map((message) => message.text),
        ["Another review", "Review of acme/api#7"]
      )
      assert.deepStrictEqual(history.messages?.[1]?.metadata, {
        event_type: "bosun_review",
        event_payload: { run: "run-1" }
      })
      const limited = yield* call(() => slack.conversations.history({ channel: CHANNEL, limit: 1 }))
      assert.deepStrictEqual(
        limited.messages?.map((message) => message.text),
        ["Another review"]
      )
      assert.strictEqual(limited.has_more, true)

      // What the client sent: a form body, the token as a bearer header, metadata JSON-encoded.
      const posted = fake.calls("chat.postMessage")[0]
      assert.strictEqual(posted?.headers["content-type"], "application/x-www-form-urlencoded")
      assert.strictEqual(posted?.headers.authorization, `Bearer ${TOKEN}`)
      assert.strictEqual(posted?.status, 200)
      assert.strictEqual(
        posted?.params.metadata,
        JSON.stringify({ event_type: "bosun_review", event_payload: { run: "run-1" } })
      )
      assert.strictEqual(fake.calls("conversations.replies")[0]?.params.include_all_metadata, "true")
    })
  )

  it.effect("chat.update changes a stored message; an unknown one is message_not_found", () =>
    Effect.gen(function* () {
      const { fake, slack } = yield* setup
      const posted = yield* call(() => slack.chat.postMessage({ channel: CHANNEL, text: "Reviewing…" }))
      const updated = yield* call(() =>
        slack.chat.update({ channel: CHANNEL, ts: posted.ts ?? "", text: "Review done: 2 findings" })
      )
      assert.strictEqual(updated.ok, true)
      assert.strictEqual(updated.ts, posted.ts)
      assert.strictEqual(updated.text, "Review done: 2 findings")
      assert.strictEqual(fake.messages(CHANNEL)[0]?.text, "Review done: 2 findings")

      const missing = yield* rejection(() => slack.chat.update({ channel: CHANNEL, ts: "1.000001", text: "x" }))
      assert.instanceOf(missing, WebAPIPlatformError)
      assert.strictEqual((missing as WebAPIPlatformError).data.error, "message_not_found")
    })
  )

  it.effect("Slack's refusals: invalid_auth, channel_not_found, no_text, thread_not_found, unknown_method", () =>
    Effect.gen(function* () {
      const { fake, slack } = yield* setup
      const errorOf = (error: unknown) => {
        assert.instanceOf(error, WebAPIPlatformError)
        assert.strictEqual((error as WebAPIPlatformError).code, ErrorCode.PlatformError)
        return (error as WebAPIPlatformError).data.error
      }
      const stranger = clientOf(fake, "xoxb-unknown")
      assert.strictEqual(errorOf(yield* rejection(() => stranger.auth.test())), "invalid_auth")
      assert.strictEqual(
        errorOf(yield* rejection(() => stranger.chat.postMessage({ channel: CHANNEL, text: "hi" }))),
        "invalid_auth"
      )
      assert.strictEqual(fake.calls("auth.test")[0]?.status, 200)
      assert.strictEqual(
        errorOf(yield* rejection(() => slack.chat.postMessage({ channel: "", text: "hi" }))),
        "channel_not_found"
      )
      assert.strictEqual(
        errorOf(yield* rejection(() => slack.chat.postMessage({ channel: CHANNEL, text: "" }))),
        "no_text"
      )
      assert.strictEqual(
        errorOf(yield* rejection(() => slack.conversations.replies({ channel: CHANNEL, ts: "1.000002" }))),
        "thread_not_found"
      )
      assert.strictEqual(errorOf(yield* rejection(() => slack.apiCall("chat.fly"))), "unknown_method")
      assert.deepStrictEqual(fake.messages(CHANNEL), [])
    })
  )

  it.effect("scripted failures surface as the client's errors, one per call, then calls go through", () =>
    Effect.gen(function* () {
      const { fake, slack } = yield* setup
      fake.failNext("chat.postMessage", [
        { status: 429, retryAfter: 7 },
        { status: 500 },
        { error: "ratelimited" },
        { drop: true }
      ])
      const post = () => slack.chat.postMessage({ channel: CHANNEL, text: "hello" })

      const limited = yield* rejection(post)
      assert.instanceOf(limited, WebAPIRateLimitedError)
      assert.strictEqual((limited as WebAPIRateLimitedError).code, ErrorCode.RateLimitedError)
      assert.strictEqual((limited as WebAPIRateLimitedError).retryAfter, 7)

      const broken = yield* rejection(post)
      assert.instanceOf(broken, WebAPIHTTPError)
      assert.strictEqual((broken as WebAPIHTTPError).statusCode, 500)

      const refused = yield* rejection(post)
      assert.instanceOf(refused, WebAPIPlatformError)
      assert.strictEqual((refused as WebAPIPlatformError).data.error, "ratelimited")

      const dropped = yield* rejection(post)
      assert.instanceOf(dropped, WebAPIRequestError)
      assert.strictEqual((dropped as WebAPIRequestError).code, ErrorCode.RequestError)

      // Other methods were never affected, and the next post goes through.
      assert.strictEqual((yield* call(() => slack.auth.test())).ok, true)
      assert.strictEqual((yield* call(post)).ok, true)
      assert.deepStrictEqual(
        fake.calls("chat.postMessage").map((recorded) => recorded.status),
        [429, 500, 200, "dropped", 200]
      )
      assert.strictEqual(fake.messages(CHANNEL).length, 1)
    })
  )

  it.effect("accepts a JSON body as Slack does", () =>
    Effect.gen(function* () {
      const { fake } = yield* setup
      const response = yield* call(() =>
        fetch(`${fake.apiUrl}chat.postMessage`, {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json; charset=utf-8" },
          body: JSON.stringify({
            channel: CHANNEL,
            text: "From JSON",
            metadata: { event_type: "bosun_json", event_payload: { ok: true } }
          })
        }).then((answer) => answer.json() as Promise<{ ok: boolean; ts: string }>)
      )
      assert.strictEqual(response.ok, true)
      assert.deepStrictEqual(fake.messages(CHANNEL)[0]?.metadata, {
        event_type: "bosun_json",
        event_payload: { ok: true }
      })
    })
  )

  it.effect("signs Events API deliveries as Slack's documented example", () =>
    Effect.sync(() => {
      const body =
        "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
      const secret = "8f742231b10e8888abcd99yyyzzz85a5"
      assert.strictEqual(
        slackSignature(secret, 1531420618, body),
        "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
      )
      assert.deepStrictEqual(signedSlackHeaders(secret, body, 1531420618), {
        "x-slack-request-timestamp": "1531420618",
        "x-slack-signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
        "content-type": "application/json"
      })
      const now = Number(signedSlackHeaders(secret, "{}")["x-slack-request-timestamp"])
      assert.approximately(now, Date.now() / 1000, 5)
    })
  )
})
