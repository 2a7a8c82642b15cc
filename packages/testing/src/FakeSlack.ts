/**
 * A local stand-in for Slack's Web API, speaking the wire format `@slack/web-api`'s `WebClient`
 * uses, so the real client talks to it (test code only; give the client `slackApiUrl:
 * `${fake.url}/api/``). The client POSTs every method to `/api/<method>` as
 * `application/x-www-form-urlencoded`, objects and arrays (`metadata`, `blocks`) JSON-encoded and
 * booleans as `"true"`; a JSON body and the query string are read too. The token is
 * `Authorization: Bearer <token>` (or a `token` parameter); an unknown or missing one answers
 * status 200 `{ok: false, error: "invalid_auth"}`, as Slack does. Methods:
 * - `auth.test`: the workspace and bot user of the token;
 * - `chat.postMessage` (`channel`, `text`, `thread_ts`, `blocks`, `metadata`): stores the message
 *   under a fresh, strictly increasing `ts` (a reply to a reply joins the parent's thread);
 * - `chat.update` (`channel`, `ts`, `text`, `blocks`, `metadata`);
 * - `conversations.replies` (`channel`, `ts`, `include_all_metadata`): the parent, then its
 *   replies oldest first;
 * - `conversations.history` (`channel`, `include_all_metadata`, `limit`, `cursor`): the channel's
 *   top-level messages, newest first;
 * - any other method answers `{ok: false, error: "unknown_method"}`.
 * Messages carry `metadata` only when `include_all_metadata` is set, as Slack's reads do. Any
 * channel id names a channel (an empty one answers `channel_not_found`). Tests script failures
 * per method (429 with `Retry-After`, 500, a Slack error, a dropped connection); every call is
 * recorded. `slackSignature`/`signedSlackHeaders` sign Events API deliveries as Slack does.
 */
import { createHmac } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer, Predicate } from "effect"

export interface FakeSlackWorkspace {
  /** The bot token (`xoxb-…`) the workspace's calls carry. */
  readonly token: string
  readonly teamId: string
  /** `Fake Team` unless given. */
  readonly teamName?: string
  /** The bot's user id (`U…`): the `user` of what it posts. */
  readonly botUserId: string
  /** `B` and the bot user id unless given. */
  readonly botId?: string
}

/** One scripted answer: 429 with `Retry-After` (seconds), a 500, `{ok: false, error}` with status 200, or the connection dropped unanswered. */
export type FakeSlackFailure =
  | { readonly status: 429; readonly retryAfter: number }
  | { readonly status: 500 }
  | { readonly error: string }
  | { readonly drop: true }

export interface FakeSlackCall {
  readonly method: string
  /** Lower-cased header names, as node reads them. */
  readonly headers: Readonly<Record<string, string>>
  /** Form and query values are strings; JSON-encoded values stay strings (as sent). */
  readonly params: Readonly<Record<string, unknown>>
  /** The HTTP status answered, or `dropped` when the connection was destroyed unanswered. */
  readonly status: number | "dropped"
}

export interface FakeSlackMetadata {
  readonly event_type: string
  readonly event_payload: unknown
}

export interface FakeSlackMessage {
  readonly channel: string
  readonly ts: string
  readonly text: string
  /** The bot user that posted it. */
  readonly user: string
  readonly bot_id: string
  readonly team: string
  /** The parent's `ts` for a thread reply; undefined for a top-level message. */
  readonly thread_ts: string | undefined
  readonly blocks: ReadonlyArray<unknown> | undefined
  readonly metadata: FakeSlackMetadata | undefined
  /** Set by `chat.update`. */
  readonly edited: { readonly user: string; readonly ts: string } | undefined
}

/** Slack's Events API signature: `v0=` and the hex HMAC-SHA256 of `v0:<timestamp>:<raw body>` under the signing secret. */
export const slackSignature = (signingSecret: string, timestampSeconds: number | string, rawBody: string) =>
  `v0=${createHmac("sha256", signingSecret).update(`v0:${timestampSeconds}:${rawBody}`).digest("hex")}`

/** The headers Slack sends with an Events API delivery of `body`, signed now (or at `nowSeconds`). */
export const signedSlackHeaders = (
  signingSecret: string,
  body: string,
  nowSeconds: number = Math.floor(Date.now() / 1000)
) => ({
  "x-slack-request-timestamp": String(nowSeconds),
  "x-slack-signature": slackSignature(signingSecret, nowSeconds, body),
  "content-type": "application/json"
})

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    req.on("data", (chunk: Buffer) => (body += chunk.toString()))
    req.on("end", () => resolve(body))
  })

/** The parameters of a call: the query string, then the body (form or JSON) over it. */
const parseParams = (url: URL, contentType: string, body: string): Record<string, unknown> => {
  const params: Record<string, unknown> = Object.fromEntries(url.searchParams)
  if (body === "") return params
  if (contentType.startsWith("application/json")) {
    try {
      const parsed: unknown = JSON.parse(body)
      return Predicate.isObject(parsed) ? { ...params, ...parsed } : params
    } catch {
      return params
    }
  }
  return { ...params, ...Object.fromEntries(new URLSearchParams(body)) }
}

/** A non-empty string parameter (numbers read as their text). */
const stringParam = (params: Readonly<Record<string, unknown>>, key: string) => {
  const value = params[key]
  if (typeof value === "number") return String(value)
  return typeof value === "string" && value !== "" ? value : undefined
}

/** Slack's booleans arrive as `true`, `"true"` or `1`. */
const flagParam = (params: Readonly<Record<string, unknown>>, key: string) => {
  const value = params[key]
  return value === true || value === 1 || value === "true" || value === "1"
}

const invalid = Symbol("invalid")

/** A parameter that may arrive JSON-encoded (form) or as is (JSON body); `invalid` when its text does not parse. */
const jsonParam = (params: Readonly<Record<string, unknown>>, key: string): unknown => {
  const value = params[key]
  if (typeof value !== "string") return value
  if (value === "") return undefined
  try {
    return JSON.parse(value)
  } catch {
    return invalid
  }
}

const headersOf = (req: IncomingMessage): Record<string, string> =>
  Object.fromEntries(
    Object.entries(req.headers).flatMap(([name, value]) =>
      value === undefined ? [] : [[name, Array.isArray(value) ? value.join(", ") : value]]
    )
  )

const METHODS = new Set([
  "auth.test",
  "chat.postMessage",
  "chat.update",
  "conversations.replies",
  "conversations.history"
])

interface StoredMessage {
  readonly channel: string
  readonly ts: string
  text: string
  readonly user: string
  readonly bot_id: string
  readonly team: string
  readonly thread_ts: string | undefined
  blocks: ReadonlyArray<unknown> | undefined
  metadata: FakeSlackMetadata | undefined
  edited: { readonly user: string; readonly ts: string } | undefined
}

export class FakeSlack extends Context.Service<
  FakeSlack,
  {
    /** `http://127.0.0.1:<port>`; the client's `slackApiUrl` is `${url}/api/`. */
    readonly url: string
    /** `${url}/api/`. */
    readonly apiUrl: string
    /** Accepts `token` as the bot token of this workspace. */
    readonly addWorkspace: (workspace: FakeSlackWorkspace) => void
    /** The next calls of `method` answer these, one per call, before the call does anything. */
    readonly failNext: (method: string, failures: ReadonlyArray<FakeSlackFailure>) => void
    /** The calls made so far (of `method` only, when given), oldest first. */
    readonly calls: (method?: string) => ReadonlyArray<FakeSlackCall>
    /** Every message stored in the channel, thread replies included, oldest first. */
    readonly messages: (channel: string) => ReadonlyArray<FakeSlackMessage>
    /** Forgets messages, calls and scripted failures; registered workspaces stay. */
    readonly reset: () => void
  }
>()("bosun/testing/FakeSlack") {
  static readonly layer = Layer.effect(
    FakeSlack,
    Effect.acquireRelease(
      Effect.promise(async () => {
        const workspaces = new Map<string, FakeSlackWorkspace>()
        const failures = new Map<string, Array<FakeSlackFailure>>()
        const calls: Array<FakeSlackCall> = []
        const stored: Array<StoredMessage> = []
        let lastMicros = 0

        /** `<seconds>.<6 digits>`, from the clock but always above the previous one. */
        const nextTs = () => {
          lastMicros = Math.max(Date.now() * 1000, lastMicros + 1)
          return `${Math.floor(lastMicros / 1_000_000)}.${String(lastMicros % 1_000_000).padStart(6, "0")}`
        }

        const botIdOf = (workspace: FakeSlackWorkspace) =>
          workspace.botId ?? `B${workspace.botUserId.replace(/^U/, "")}`

        const find = (channel: string, ts: string) =>
          stored.find((message) => message.channel === channel && message.ts === ts)
        const parentOf = (message: StoredMessage) =>
          message.thread_ts === undefined ? undefined : find(message.channel, message.thread_ts)

        /** A message as Slack's reads and answers show it. */
        const render = (message: StoredMessage, withMetadata: boolean, inThread: boolean) => {
          const replies = stored.filter(
            (reply) => reply.channel === message.channel && reply.thread_ts === message.ts && reply.ts !== message.ts
          )
          const latest = replies.at(-1)
          return {
            type: "message",
            user: message.user,
            bot_id: message.bot_id,
            text: message.text,
            ts: message.ts,
            team: message.team,
            ...(message.blocks === undefined ? {} : { blocks: message.blocks }),
            ...(message.thread_ts === undefined
              ? inThread || latest !== undefined
                ? { thread_ts: message.ts }
                : {}
              : { thread_ts: message.thread_ts, parent_user_id: parentOf(message)?.user ?? message.user }),
            ...(latest === undefined
              ? {}
              : {
                  reply_count: replies.length,
                  reply_users_count: new Set(replies.map((reply) => reply.user)).size,
                  reply_users: [...new Set(replies.map((reply) => reply.user))],
                  latest_reply: latest.ts
                }),
            ...(message.edited === undefined ? {} : { edited: message.edited }),
            ...(withMetadata && message.metadata !== undefined ? { metadata: message.metadata } : {})
          }
        }

        /** `metadata` as given, or the Slack error naming why it is refused. */
        const readMetadata = (params: Readonly<Record<string, unknown>>) => {
          const value = jsonParam(params, "metadata")
          if (value === undefined || value === null) return { metadata: undefined }
          if (value === invalid || !Predicate.isObject(value)) return { error: "invalid_metadata_format" }
          if (typeof value.event_type !== "string" || value.event_type === "")
            return { error: "invalid_metadata_schema" }
          return { metadata: { event_type: value.event_type, event_payload: value.event_payload ?? {} } }
        }
        const readBlocks = (params: Readonly<Record<string, unknown>>) => {
          const value = jsonParam(params, "blocks")
          if (value === undefined || value === null) return { blocks: undefined }
          if (!Array.isArray(value)) return { error: "invalid_blocks_format" }
          return { blocks: value as ReadonlyArray<unknown> }
        }

        /** Carries out an authorized call; answers Slack's body (`ok` decides success). */
        const perform = (
          method: string,
          workspace: FakeSlackWorkspace,
          params: Readonly<Record<string, unknown>>
        ): Record<string, unknown> => {
          const failed = (error: string) => ({ ok: false, error })
          const teamName = workspace.teamName ?? "Fake Team"
          if (method === "auth.test") {
            return {
              ok: true,
              url: `https://${teamName.toLowerCase().replace(/[^a-z0-9]+/g, "-")}.slack.com/`,
              team: teamName,
              user: "bosun",
              team_id: workspace.teamId,
              user_id: workspace.botUserId,
              bot_id: botIdOf(workspace),
              is_enterprise_install: false
            }
          }
          const channel = stringParam(params, "channel")
          if (channel === undefined) return failed("channel_not_found")
          const withMetadata = flagParam(params, "include_all_metadata")

          if (method === "chat.postMessage") {
            const text = stringParam(params, "text")
            const blocks = readBlocks(params)
            if (blocks.error !== undefined) return failed(blocks.error)
            if (text === undefined && (blocks.blocks === undefined || blocks.blocks.length === 0)) {
              return failed("no_text")
            }
            const metadata = readMetadata(params)
            if (metadata.error !== undefined) return failed(metadata.error)
            const threadTs = stringParam(params, "thread_ts")
            const threadParent = threadTs === undefined ? undefined : find(channel, threadTs)
            const message: StoredMessage = {
              channel,
              ts: nextTs(),
              text: text ?? "",
              user: workspace.botUserId,
              bot_id: botIdOf(workspace),
              team: workspace.teamId,
              // A reply to a reply goes to the thread its target is in.
              thread_ts: threadTs === undefined ? undefined : (threadParent?.thread_ts ?? threadTs),
              blocks: blocks.blocks,
              metadata: metadata.metadata,
              edited: undefined
            }
            stored.push(message)
            return { ok: true, channel, ts: message.ts, message: render(message, true, false) }
          }

          if (method === "chat.update") {
            const ts = stringParam(params, "ts")
            const message = ts === undefined ? undefined : find(channel, ts)
            if (message === undefined) return failed("message_not_found")
            const text = stringParam(params, "text")
            const blocks = readBlocks(params)
            if (blocks.error !== undefined) return failed(blocks.error)
            const metadata = readMetadata(params)
            if (metadata.error !== undefined) return failed(metadata.error)
            if (text === undefined && blocks.blocks === undefined && metadata.metadata === undefined) {
              return failed("no_text")
            }
            if (text !== undefined) message.text = text
            if (blocks.blocks !== undefined) message.blocks = blocks.blocks
            if (metadata.metadata !== undefined) message.metadata = metadata.metadata
            message.edited = { user: workspace.botUserId, ts: nextTs() }
            return {
              ok: true,
              channel,
              ts: message.ts,
              text: message.text,
              message: render(message, true, false)
            }
          }

          if (method === "conversations.replies") {
            const ts = stringParam(params, "ts")
            const message = ts === undefined ? undefined : find(channel, ts)
            if (message === undefined) return failed("thread_not_found")
            // Asked for a reply's ts, Slack answers that reply alone.
            const thread =
              message.thread_ts === undefined
                ? [message, ...stored.filter((reply) => reply.channel === channel && reply.thread_ts === message.ts)]
                : [message]
            return {
              ok: true,
              messages: thread.map((entry) => render(entry, withMetadata, true)),
              has_more: false
            }
          }

          // conversations.history
          const limit = Math.min(Math.max(Number(stringParam(params, "limit") ?? 100) || 100, 1), 999)
          const cursor = stringParam(params, "cursor")
          const start =
            cursor === undefined
              ? 0
              : Number(
                  Buffer.from(cursor, "base64")
                    .toString()
                    .replace(/^offset:/, "")
                )
          const topLevel = stored.filter((message) => message.channel === channel && message.thread_ts === undefined)
          const newestFirst = [...topLevel].reverse()
          const page = newestFirst.slice(start, start + limit)
          const hasMore = start + limit < newestFirst.length
          return {
            ok: true,
            messages: page.map((message) => render(message, withMetadata, false)),
            has_more: hasMore,
            pin_count: 0,
            ...(hasMore
              ? { response_metadata: { next_cursor: Buffer.from(`offset:${start + limit}`).toString("base64") } }
              : {})
          }
        }

        const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
          const body = await readBody(req)
          const url = new URL(req.url ?? "/", "http://fake")
          const headers = headersOf(req)
          const params = parseParams(url, headers["content-type"] ?? "", body)
          const method = /^\/api\/([^/]+)$/.exec(url.pathname)?.[1]
          const answer = (status: number, value: unknown, extraHeaders: Record<string, string> = {}) => {
            calls.push({ method: method ?? url.pathname, headers, params, status })
            res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...extraHeaders })
            res.end(JSON.stringify(value))
          }
          if (method === undefined) return answer(404, { ok: false, error: "not_found" })

          const failure = failures.get(method)?.shift()
          if (failure !== undefined) {
            if ("drop" in failure) {
              calls.push({ method, headers, params, status: "dropped" })
              return req.socket.destroy()
            }
            if ("error" in failure) return answer(200, { ok: false, error: failure.error })
            if (failure.status === 429) {
              return answer(429, { ok: false, error: "ratelimited" }, { "retry-after": String(failure.retryAfter) })
            }
            return answer(500, { ok: false, error: "internal_error" })
          }
          if (!METHODS.has(method)) return answer(200, { ok: false, error: "unknown_method", req_method: method })

          const token = /^bearer\s+(.+)$/i.exec(headers.authorization ?? "")?.[1] ?? stringParam(params, "token")
          const workspace = token === undefined ? undefined : workspaces.get(token)
          if (workspace === undefined) return answer(200, { ok: false, error: "invalid_auth" })
          return answer(200, perform(method, workspace, params))
        })
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
        const { port } = server.address() as AddressInfo
        const url = `http://127.0.0.1:${port}`
        return {
          server,
          service: FakeSlack.of({
            url,
            apiUrl: `${url}/api/`,
            addWorkspace: (workspace) => {
              workspaces.set(workspace.token, workspace)
            },
            failNext: (method, next) => {
              failures.set(method, [...(failures.get(method) ?? []), ...next])
            },
            calls: (method) => calls.filter((call) => method === undefined || call.method === method),
            messages: (channel) =>
              stored.filter((message) => message.channel === channel).map((message) => structuredClone({ ...message })),
            reset: () => {
              failures.clear()
              calls.length = 0
              stored.length = 0
            }
          })
        }
      }),
      ({ server }) =>
        Effect.promise(
          () =>
            new Promise<void>((resolve) => {
              server.closeAllConnections()
              server.close(() => resolve())
            })
        )
    ).pipe(Effect.map(({ service }) => service))
  )
}
