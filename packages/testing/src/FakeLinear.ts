/**
 * A local stand-in for Linear's GraphQL API, answering the documents `@linear/sdk`'s
 * `LinearClient` sends, so the real client talks to it (test code only; give the client `apiUrl:
 * `${fake.url}/graphql``). The client POSTs `{query, variables}` as JSON to that one URL, with
 * `Authorization: <api key>` for an API key or `Authorization: Bearer <token>` for an OAuth token;
 * both forms of a token given to `addToken` are accepted, anything else answers 400 with a GraphQL
 * error of type `authentication error` (the SDK's `AuthenticationLinearError`). The operation is
 * told by its first root field, and its arguments read from the variables (or a literal):
 * - `commentCreate(input: {id?, issueId, body})`: a new comment, under `input.id` when given
 *   ("Entity already exists" when that id is taken, "Entity not found" for an unknown issue);
 * - `comments(filter:)`: by `filter.id` and `filter.issue.id` (`eq` or `in`), oldest first, one page;
 * - `issueUpdate(id, input: {stateId?, assigneeId?, title?, description?})`;
 * - `comment(id)`, `issue(id)` (or its identifier), `workflowState(id)`, `viewer`, and
 *   `organization` (`{id, name, urlKey}` of the workspace the token was given for).
 * Answers hold every field the SDK's fragments for those types select that its models read, as
 * Linear answers them (lists empty, unset links null); refusals are GraphQL errors with status 200
 * and `extensions.type` `invalid input` (the SDK's `InvalidInputLinearError`). Tests script
 * failures per root field (429 with `Retry-After` and type `ratelimited`, 500, a dropped
 * connection); every call is recorded. `linearSignature` signs webhook deliveries as Linear does.
 *
 * `POST /oauth/token` is Linear's token endpoint for `grant_type=refresh_token` (form-encoded,
 * client credentials in the body): a known refresh token of that client answers a new access
 * token (accepted from then on) and a new refresh token, and the one spent is forgotten, as
 * Linear rotates them; a spent or unknown one answers 400 `invalid_grant`, a wrong client 401
 * `invalid_client`.
 */
import { createHmac, randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer, Predicate } from "effect"

export interface FakeLinearIssueSeed {
  readonly id: string
  /** `ENG-123`: the team key and number. */
  readonly identifier: string
  readonly title: string
  readonly description?: string
  /** `https://linear.app/fake/issue/<identifier>` unless given. */
  readonly url?: string
  /** The workflow state it is in (name it with `addWorkflowState`); none unless given. */
  readonly stateId?: string
}

export interface FakeLinearIssue {
  readonly id: string
  readonly identifier: string
  readonly title: string
  readonly description: string | undefined
  readonly url: string
  readonly stateId: string | undefined
  readonly assigneeId: string | undefined
}

export interface FakeLinearComment {
  readonly id: string
  readonly body: string
  readonly issueId: string
  /** ISO 8601. */
  readonly createdAt: string
  /** The viewer at the time it was created. */
  readonly userId: string
}

export interface FakeLinearUser {
  readonly id: string
  readonly name: string
  readonly displayName: string
  /** `<displayName>@example.com` unless given. */
  readonly email?: string
}

export interface FakeLinearWorkflowState {
  readonly id: string
  readonly name: string
  /** `backlog`, `unstarted`, `started`, `completed`, `canceled`, `triage`; `unstarted` unless given. */
  readonly type?: string
}

/** One scripted answer: 429 (with `Retry-After` in seconds when given), a 500, or the connection dropped unanswered. */
export type FakeLinearFailure =
  | { readonly status: 429; readonly retryAfter?: number }
  | { readonly status: 500 }
  | { readonly drop: true }

/** One call to `/oauth/token`, as the fake answered it. */
export interface FakeLinearTokenRequest {
  readonly grantType: string
  readonly clientId: string
  readonly status: number
  /** The access token it issued, when it issued one. */
  readonly issued: string | undefined
}

export interface FakeLinearCall {
  /** The first root field of the document (`commentCreate`, `comments`, `viewer`, …); empty when there is none. */
  readonly rootField: string
  readonly variables: Readonly<Record<string, unknown>>
  /** Lower-cased header names, as node reads them. */
  readonly headers: Readonly<Record<string, string>>
  /** The HTTP status answered, or `dropped` when the connection was destroyed unanswered. */
  readonly status: number | "dropped"
}

/** Linear's webhook signature (the `linear-signature` header): the hex HMAC-SHA256 of the raw body under the webhook secret. */
export const linearSignature = (secret: string, rawBody: string) =>
  createHmac("sha256", secret).update(rawBody).digest("hex")

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    req.on("data", (chunk: Buffer) => (body += chunk.toString()))
    req.on("end", () => resolve(body))
  })

const parseObject = (text: string): { readonly [key: string]: unknown } => {
  try {
    const parsed: unknown = JSON.parse(text)
    return Predicate.isObject(parsed) ? parsed : {}
  } catch {
    return {}
  }
}

const headersOf = (req: IncomingMessage): Record<string, string> =>
  Object.fromEntries(
    Object.entries(req.headers).flatMap(([name, value]) =>
      value === undefined ? [] : [[name, Array.isArray(value) ? value.join(", ") : value]]
    )
  )

/**
 * The first field selected by the document's first operation (an alias resolved to the field's
 * name) and the text of its arguments.
 */
const rootOf = (document: string) => {
  const root = /^\s*(?:(?:query|mutation|subscription)\b[^{]*)?\{\s*(?:\w+\s*:\s*)?(\w+)\s*(?:\(([^)]*)\))?/.exec(
    document.replace(/#[^\n]*/g, "")
  )
  return { field: root?.[1] ?? "", args: root?.[2] ?? "" }
}

/** The value of argument `name` in the root field's arguments: the variable it names, or a string, number or boolean literal. */
const argumentOf = (args: string, name: string, variables: { readonly [key: string]: unknown }): unknown => {
  const value = new RegExp(
    `(?:^|[\\s,])${name}\\s*:\\s*(\\$\\w+|"(?:[^"\\\\]|\\\\.)*"|-?\\d+(?:\\.\\d+)?|true|false|null)`
  ).exec(args)?.[1]
  if (value === undefined) return undefined
  return value.startsWith("$") ? variables[value.slice(1)] : JSON.parse(value)
}

const objectOf = (value: unknown): { readonly [key: string]: unknown } => (Predicate.isObject(value) ? value : {})

/** Whether `value` passes a Linear ID comparator (`eq`, `neq`, `in`, `nin`); an absent comparator passes all. */
const matchesId = (comparator: unknown, value: string) => {
  if (!Predicate.isObject(comparator)) return true
  const { eq, neq, in: among, nin } = comparator
  if (typeof eq === "string" && value !== eq) return false
  if (typeof neq === "string" && value === neq) return false
  if (Array.isArray(among) && !among.includes(value)) return false
  if (Array.isArray(nin) && nin.includes(value)) return false
  return true
}

/** A GraphQL error as Linear words it; `type` is what the SDK maps to its error classes. */
const graphqlError = (message: string, type: string, code: string, userPresentableMessage?: string) => ({
  message,
  extensions: {
    type,
    code,
    userError: type === "invalid input" || type === "authentication error",
    ...(userPresentableMessage === undefined ? {} : { userPresentableMessage })
  }
})

const notFound = (entity: string) =>
  graphqlError(`Entity not found: ${entity}`, "invalid input", "INPUT_ERROR", `Could not find referenced ${entity}.`)

interface IssueRecord {
  readonly seed: FakeLinearIssueSeed
  title: string
  description: string | undefined
  stateId: string | undefined
  assigneeId: string | undefined
  readonly createdAt: string
  updatedAt: string
}

const DEFAULT_VIEWER: FakeLinearUser = { id: "fake-viewer", name: "Fake Viewer", displayName: "fake" }

/** The workspace of a token given without one. */
export const FAKE_LINEAR_WORKSPACE = "fake-workspace"

export class FakeLinear extends Context.Service<
  FakeLinear,
  {
    /** `http://127.0.0.1:<port>`; the client's `apiUrl` is `${url}/graphql`. */
    readonly url: string
    /** `${url}/graphql`. */
    readonly apiUrl: string
    /**
     * Accepts `token` as an API key (`Authorization: <token>`) or OAuth token (`Bearer <token>`),
     * a credential of `workspace` (`FAKE_LINEAR_WORKSPACE` when not given).
     */
    readonly addToken: (token: string, workspace?: string) => void
    /** Lets `clientId`/`clientSecret` spend `refreshToken` once at `/oauth/token`, for tokens of `workspace`. */
    readonly addRefreshToken: (grant: {
      readonly clientId: string
      readonly clientSecret: string
      readonly refreshToken: string
      readonly workspace?: string
    }) => void
    /** Stops accepting the access token (revoked before its expiry). */
    readonly revokeToken: (token: string) => void
    /** Makes `/oauth/token` take this long to answer. */
    readonly setTokenDelay: (millis: number) => void
    /** The calls to `/oauth/token` so far, oldest first. */
    readonly tokenRequests: () => ReadonlyArray<FakeLinearTokenRequest>
    /** Who `viewer` is and who writes the comments (`fake-viewer` until set). */
    readonly setViewer: (viewer: FakeLinearUser) => void
    /** Adds the issue, or puts it back as given. */
    readonly addIssue: (issue: FakeLinearIssueSeed) => void
    /** Names a workflow state, for `issue(id) { state }` and `workflowState(id)`. */
    readonly addWorkflowState: (state: FakeLinearWorkflowState) => void
    /** The issue as it stands (after any `issueUpdate`). */
    readonly issue: (id: string) => FakeLinearIssue | undefined
    /** The issue's comments, oldest first. */
    readonly comments: (issueId: string) => ReadonlyArray<FakeLinearComment>
    /** The next calls whose root field is `rootField` answer these, one per call, before the call does anything. */
    readonly failNext: (rootField: string, failures: ReadonlyArray<FakeLinearFailure>) => void
    /** The calls made so far (with that root field only, when given), oldest first. */
    readonly calls: (rootField?: string) => ReadonlyArray<FakeLinearCall>
    /**
     * Forgets calls, token requests, the token delay, scripted failures and comments, and puts every issue back as `addIssue` gave
     * it; tokens, the viewer and workflow states stay.
     */
    readonly reset: () => void
  }
>()("bosun/testing/FakeLinear") {
  static readonly layer = Layer.effect(
    FakeLinear,
    Effect.acquireRelease(
      Effect.promise(async () => {
        // token -> the workspace it is a credential of
        const tokens = new Map<string, string>()
        const refreshTokens = new Map<
          string,
          { readonly clientId: string; readonly clientSecret: string; readonly workspace: string }
        >()
        const tokenRequests: Array<FakeLinearTokenRequest> = []
        let tokenDelay = 0
        const issues = new Map<string, IssueRecord>()
        const states = new Map<string, FakeLinearWorkflowState>()
        const comments: Array<FakeLinearComment> = []
        const failures = new Map<string, Array<FakeLinearFailure>>()
        const calls: Array<FakeLinearCall> = []
        let viewer = DEFAULT_VIEWER
        let lastSyncId = 1000

        const urlOf = (record: IssueRecord) =>
          record.seed.url ?? `https://linear.app/fake/issue/${record.seed.identifier.toLowerCase()}`
        const freshIssue = (seed: FakeLinearIssueSeed): IssueRecord => {
          const now = new Date().toISOString()
          return {
            seed,
            title: seed.title,
            description: seed.description,
            stateId: seed.stateId,
            assigneeId: undefined,
            createdAt: now,
            updatedAt: now
          }
        }

        const userData = (user: FakeLinearUser) => ({
          __typename: "User",
          id: user.id,
          name: user.name,
          displayName: user.displayName,
          email: user.email ?? `${user.displayName}@example.com`,
          description: null,
          avatarUrl: null,
          avatarBackgroundColor: "#5e6ad2",
          initials: user.name
            .split(/\s+/)
            .map((word) => word.charAt(0).toUpperCase())
            .join("")
            .slice(0, 2),
          createdIssueCount: 0,
          statusUntilAt: null,
          statusEmoji: null,
          statusLabel: null,
          timezone: "UTC",
          lastSeen: null,
          disableReason: null,
          archivedAt: null,
          createdAt: "2026-01-01T00:00:00.000Z",
          updatedAt: "2026-01-01T00:00:00.000Z",
          gitHubUserId: null,
          title: null,
          url: `https://linear.app/fake/profiles/${user.displayName}`,
          active: true,
          isAssignable: true,
          isMentionable: true,
          guest: false,
          admin: false,
          owner: false,
          app: false,
          isMe: user.id === viewer.id,
          supportsAgentSessions: false,
          canAccessAnyPublicTeam: true,
          calendarHash: null,
          inviteHash: ""
        })

        const stateData = (state: FakeLinearWorkflowState) => ({
          __typename: "WorkflowState",
          id: state.id,
          name: state.name,
          type: state.type ?? "unstarted",
          color: "#e2e2e2",
          description: null,
          position: 0,
          inheritedFrom: null,
          team: null,
          archivedAt: null,
          createdAt: "2026-01-01T00:00:00.000Z",
          updatedAt: "2026-01-01T00:00:00.000Z"
        })

        const issueData = (record: IssueRecord) => {
          const { id, identifier } = record.seed
          return {
            __typename: "Issue",
            id,
            identifier,
            number: Number(/-(\d+)$/.exec(identifier)?.[1] ?? 0),
            title: record.title,
            description: record.description ?? null,
            url: urlOf(record),
            branchName: `${identifier.toLowerCase()}`,
            priority: 0,
            priorityLabel: "No priority",
            prioritySortOrder: 0,
            sortOrder: 0,
            boardOrder: 0,
            subIssueSortOrder: null,
            estimate: null,
            dueDate: null,
            trashed: null,
            labelIds: [],
            previousIdentifiers: [],
            reactionData: [],
            reactions: [],
            customerTicketCount: 0,
            integrationSourceType: null,
            inheritsSharedAccess: false,
            sharedAccess: {
              __typename: "IssueSharedAccess",
              isShared: false,
              sharedWithCount: 0,
              viewerHasOnlySharedAccess: false,
              disallowedIssueFields: [],
              sharedWithUsers: []
            },
            syncedWith: null,
            botActor: null,
            state:
              record.stateId === undefined
                ? null
                : { id: record.stateId, name: states.get(record.stateId)?.name ?? record.stateId },
            assignee: record.assigneeId === undefined ? null : { id: record.assigneeId },
            creator: { id: viewer.id },
            team: { id: `team-${identifier.replace(/-\d+$/, "").toLowerCase()}` },
            delegate: null,
            cycle: null,
            parent: null,
            project: null,
            projectMilestone: null,
            sourceComment: null,
            lastAppliedTemplate: null,
            recurringIssueTemplate: null,
            externalUserCreator: null,
            asksExternalUserRequester: null,
            asksRequester: null,
            snoozedBy: null,
            favorite: null,
            slaType: null,
            createdAt: record.createdAt,
            updatedAt: record.updatedAt,
            archivedAt: null,
            startedTriageAt: null,
            triagedAt: null,
            addedToCycleAt: null,
            addedToProjectAt: null,
            addedToTeamAt: record.createdAt,
            autoArchivedAt: null,
            autoClosedAt: null,
            canceledAt: null,
            completedAt: null,
            startedAt: null,
            slaStartedAt: null,
            slaBreachesAt: null,
            slaHighRiskAt: null,
            slaMediumRiskAt: null,
            snoozedUntilAt: null
          }
        }

        const commentData = (comment: FakeLinearComment) => {
          const issue = issues.get(comment.issueId)
          return {
            __typename: "Comment",
            id: comment.id,
            body: comment.body,
            issueId: comment.issueId,
            issue: { id: comment.issueId },
            user: { id: comment.userId },
            url: `${issue === undefined ? "https://linear.app/fake/issue/unknown" : urlOf(issue)}#comment-${comment.id.slice(0, 8)}`,
            reactionData: [],
            reactions: [],
            createdAt: comment.createdAt,
            updatedAt: comment.createdAt,
            editedAt: null,
            archivedAt: null,
            resolvedAt: null,
            quotedText: null,
            parentId: null,
            parent: null,
            resolvingCommentId: null,
            resolvingComment: null,
            resolvingUser: null,
            documentContentId: null,
            documentContent: null,
            initiativeId: null,
            initiative: null,
            initiativeUpdateId: null,
            initiativeUpdate: null,
            projectId: null,
            project: null,
            projectUpdateId: null,
            projectUpdate: null,
            agentSession: null,
            botActor: null,
            externalUser: null,
            externalThread: null,
            syncedWith: null
          }
        }

        type Answer = { readonly status: number; readonly body: unknown }
        const data = (value: Record<string, unknown>): Answer => ({ status: 200, body: { data: value } })
        const refused = (...errors: ReadonlyArray<ReturnType<typeof graphqlError>>): Answer => ({
          status: 200,
          body: { data: null, errors }
        })

        /** Carries out an authenticated operation. */
        const perform = (
          rootField: string,
          args: string,
          variables: { readonly [key: string]: unknown },
          workspace: string
        ) => {
          const arg = (name: string) => argumentOf(args, name, variables)

          if (rootField === "viewer") return data({ viewer: userData(viewer) })
          if (rootField === "organization") {
            return data({ organization: { id: workspace, name: `Workspace ${workspace}`, urlKey: workspace } })
          }

          if (rootField === "issue") {
            const id = arg("id")
            const record = typeof id === "string" ? issues.get(id) : undefined
            // Linear finds an issue by its identifier too.
            const found =
              record ??
              [...issues.values()].find((candidate) => typeof id === "string" && candidate.seed.identifier === id)
            return found === undefined ? refused(notFound("Issue")) : data({ issue: issueData(found) })
          }

          if (rootField === "workflowState") {
            const id = arg("id")
            const state = typeof id === "string" ? states.get(id) : undefined
            return state === undefined ? refused(notFound("WorkflowState")) : data({ workflowState: stateData(state) })
          }

          if (rootField === "commentCreate") {
            const input = objectOf(arg("input"))
            const issue = typeof input.issueId === "string" ? issues.get(input.issueId) : undefined
            if (typeof input.body !== "string" || input.body === "") {
              return refused(
                graphqlError("Argument Validation Error", "invalid input", "INVALID_INPUT", "body must not be empty.")
              )
            }
            if (issue === undefined) return refused(notFound("Issue"))
            const id = typeof input.id === "string" ? input.id : randomUUID()
            if (comments.some((comment) => comment.id === id)) {
              return refused(
                graphqlError(
                  "Entity already exists",
                  "invalid input",
                  "INPUT_ERROR",
                  "A comment with this id already exists."
                )
              )
            }
            const comment: FakeLinearComment = {
              id,
              body: input.body,
              issueId: issue.seed.id,
              createdAt: new Date().toISOString(),
              userId: viewer.id
            }
            comments.push(comment)
            return data({
              commentCreate: {
                __typename: "CommentPayload",
                success: true,
                lastSyncId: ++lastSyncId,
                comment: commentData(comment)
              }
            })
          }

          if (rootField === "comment") {
            const id = arg("id")
            const comment = comments.find((candidate) => candidate.id === id)
            return comment === undefined ? refused(notFound("Comment")) : data({ comment: commentData(comment) })
          }

          if (rootField === "comments") {
            const filter = objectOf(arg("filter"))
            const issueFilter = objectOf(filter.issue)
            const nodes = comments
              .filter((comment) => matchesId(filter.id, comment.id) && matchesId(issueFilter.id, comment.issueId))
              .map(commentData)
            return data({
              comments: {
                __typename: "CommentConnection",
                nodes,
                pageInfo: {
                  __typename: "PageInfo",
                  hasNextPage: false,
                  hasPreviousPage: false,
                  startCursor: nodes[0]?.id ?? null,
                  endCursor: nodes.at(-1)?.id ?? null
                }
              }
            })
          }

          if (rootField === "issueUpdate") {
            const id = arg("id")
            const record = typeof id === "string" ? issues.get(id) : undefined
            if (record === undefined) return refused(notFound("Issue"))
            const input = objectOf(arg("input"))
            if (typeof input.stateId === "string") record.stateId = input.stateId
            if (typeof input.assigneeId === "string") record.assigneeId = input.assigneeId
            if (input.assigneeId === null) record.assigneeId = undefined
            if (typeof input.title === "string") record.title = input.title
            if (typeof input.description === "string") record.description = input.description
            record.updatedAt = new Date().toISOString()
            return data({
              issueUpdate: {
                __typename: "IssuePayload",
                success: true,
                lastSyncId: ++lastSyncId,
                issue: { id: record.seed.id }
              }
            })
          }

          return {
            status: 400,
            body: {
              errors: [
                graphqlError(
                  `Cannot query field "${rootField}" on type "Query" (the fake Linear answers commentCreate, comment, comments, issueUpdate, issue, workflowState, viewer and organization).`,
                  "graphql error",
                  "GRAPHQL_VALIDATION_FAILED"
                )
              ]
            }
          }
        }

        const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
          const text = await readBody(req)
          const url = new URL(req.url ?? "/", "http://fake")
          const headers = headersOf(req)
          const { query, variables: given } = parseObject(text)
          const document = typeof query === "string" ? query : ""
          const variables = objectOf(given)
          const { field: rootField, args } = rootOf(document)
          const answer = ({ status, body }: Answer, extraHeaders: Record<string, string> = {}) => {
            calls.push({ rootField, variables, headers, status })
            res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...extraHeaders })
            res.end(JSON.stringify(body))
          }
          if (req.method === "POST" && url.pathname === "/oauth/token") {
            const form = new URLSearchParams(text)
            const grantType = form.get("grant_type") ?? ""
            const clientId = form.get("client_id") ?? ""
            const spent = form.get("refresh_token") ?? ""
            if (tokenDelay > 0) await new Promise((resolve) => setTimeout(resolve, tokenDelay))
            const grant = refreshTokens.get(spent)
            const oauthAnswer = (status: number, body: Record<string, unknown>, issued?: string) => {
              tokenRequests.push({ grantType, clientId, status, issued })
              res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" })
              res.end(JSON.stringify(body))
            }
            if (grantType !== "refresh_token") {
              return oauthAnswer(400, { error: "unsupported_grant_type" })
            }
            if (grant === undefined) {
              return oauthAnswer(400, {
                error: "invalid_grant",
                error_description: "Refresh token is invalid or spent"
              })
            }
            if (grant.clientId !== clientId || grant.clientSecret !== form.get("client_secret")) {
              return oauthAnswer(401, { error: "invalid_client", error_description: "Client authentication failed" })
            }
            refreshTokens.delete(spent)
            const accessToken = `lin_oauth_${randomUUID().replaceAll("-", "")}`
            const refreshToken = `lin_refresh_${randomUUID().replaceAll("-", "")}`
            tokens.set(accessToken, grant.workspace)
            refreshTokens.set(refreshToken, grant)
            return oauthAnswer(
              200,
              {
                access_token: accessToken,
                token_type: "Bearer",
                expires_in: 86399,
                scope: "read,write",
                refresh_token: refreshToken
              },
              accessToken
            )
          }
          if (req.method !== "POST" || url.pathname !== "/graphql") {
            return answer({ status: 404, body: { errors: [{ message: "Not found" }] } })
          }

          const failure = failures.get(rootField)?.shift()
          if (failure !== undefined) {
            if ("drop" in failure) {
              calls.push({ rootField, variables, headers, status: "dropped" })
              return req.socket.destroy()
            }
            if (failure.status === 429) {
              return answer(
                {
                  status: 429,
                  body: {
                    errors: [
                      graphqlError(
                        "Rate limit exceeded",
                        "ratelimited",
                        "RATELIMITED",
                        "Too many requests, please try again later."
                      )
                    ]
                  }
                },
                {
                  "x-ratelimit-requests-limit": "1500",
                  "x-ratelimit-requests-remaining": "0",
                  "x-ratelimit-requests-reset": String(Date.now() + (failure.retryAfter ?? 60) * 1000),
                  ...(failure.retryAfter === undefined ? {} : { "retry-after": String(failure.retryAfter) })
                }
              )
            }
            return answer({
              status: 500,
              body: { errors: [graphqlError("Internal server error", "internal error", "INTERNAL_SERVER_ERROR")] }
            })
          }

          const authorization = headers.authorization ?? ""
          const token = authorization.replace(/^bearer\s+/i, "")
          if (token === "" || !tokens.has(token)) {
            return answer({
              status: 400,
              body: {
                errors: [
                  graphqlError(
                    "Authentication required, not authenticated",
                    "authentication error",
                    "AUTHENTICATION_ERROR",
                    "You need to authenticate to access this operation."
                  )
                ]
              }
            })
          }
          if (document === "") {
            return answer({
              status: 400,
              body: {
                errors: [graphqlError("Must provide query string.", "graphql error", "GRAPHQL_VALIDATION_FAILED")]
              }
            })
          }
          return answer(perform(rootField, args, variables, tokens.get(token) ?? FAKE_LINEAR_WORKSPACE))
        })
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
        const { port } = server.address() as AddressInfo
        const url = `http://127.0.0.1:${port}`
        return {
          server,
          service: FakeLinear.of({
            url,
            apiUrl: `${url}/graphql`,
            addToken: (token, workspace = FAKE_LINEAR_WORKSPACE) => {
              tokens.set(token.replace(/^bearer\s+/i, ""), workspace)
            },
            addRefreshToken: (grant) => {
              refreshTokens.set(grant.refreshToken, {
                clientId: grant.clientId,
                clientSecret: grant.clientSecret,
                workspace: grant.workspace ?? FAKE_LINEAR_WORKSPACE
              })
            },
            revokeToken: (token) => {
              tokens.delete(token)
            },
            setTokenDelay: (millis) => {
              tokenDelay = millis
            },
            tokenRequests: () => [...tokenRequests],
            setViewer: (next) => {
              viewer = next
            },
            addIssue: (seed) => {
              issues.set(seed.id, freshIssue(seed))
            },
            addWorkflowState: (state) => {
              states.set(state.id, state)
            },
            issue: (id) => {
              const record = issues.get(id)
              return record === undefined
                ? undefined
                : {
                    id: record.seed.id,
                    identifier: record.seed.identifier,
                    title: record.title,
                    description: record.description,
                    url: urlOf(record),
                    stateId: record.stateId,
                    assigneeId: record.assigneeId
                  }
            },
            comments: (issueId) => comments.filter((comment) => comment.issueId === issueId),
            failNext: (rootField, next) => {
              failures.set(rootField, [...(failures.get(rootField) ?? []), ...next])
            },
            calls: (rootField) => calls.filter((call) => rootField === undefined || call.rootField === rootField),
            reset: () => {
              calls.length = 0
              tokenRequests.length = 0
              tokenDelay = 0
              failures.clear()
              comments.length = 0
              for (const [id, record] of issues) issues.set(id, freshIssue(record.seed))
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
