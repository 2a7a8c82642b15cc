/**
 * A local stand-in for GitHub that speaks the public wire format of the parts Bosun uses, laid out
 * like GitHub Enterprise Server (OAuth at the root, REST under `/api/v3`, GraphQL at
 * `/api/graphql`), so the real Octokit clients talk to it (test code only):
 * - `POST /login/oauth/access_token` (form or JSON): a known code for the right client id and
 *   secret gives `{access_token, token_type, scope}`, anything else `{error:
 *   "bad_verification_code", ...}` with status 200, as GitHub does;
 * - `GET /api/v3/user`, `GET /api/v3/user/installations`, `GET /api/v3/user/memberships/orgs/:org`
 *   for a token it issued; 401 `Bad credentials` otherwise; `GET /api/v3/users/:username`, the
 *   public profile of an installation's account or a known user, without credentials;
 * - as the App (a JWT signed RS256 with a registered App's private key, checked against its public
 *   key, `iss` the App id, unexpired): `GET /api/v3/repos/:owner/:repo/installation` (404 where
 *   the App is not installed), `POST /api/v3/app/installations/:id/access_tokens` (an
 *   installation token valid one hour) and `GET /api/v3/app` (the App itself; 401 for a JWT
 *   that does not verify, as GitHub answers a key that is not the App's);
 * - with an installation token that reaches the repository (401 `Bad credentials` for an unknown
 *   token, 404 where the installation does not reach it), under `/api/v3/repos/:owner/:repo`:
 *   `GET branches/:branch`; `GET`/`PATCH pulls/:n`; `GET pulls/:n/files`, `GET pulls/:n/reviews`,
 *   `GET pulls/:n/reviews/:id/comments` (paginated by `per_page`/`page` with a `link` header);
 *   `POST pulls/:n/reviews` (422 `Pull request review thread line must be part of the diff` when
 *   a comment's line range is not in the file's patch on its side; each comment opens a thread);
 *   `POST pulls/:n/comments/:id/replies`; `GET commits/:ref/check-runs` (`check_name`, `status`,
 *   `filter=latest|all`), `POST check-runs`, `PATCH check-runs/:id`; `POST issues/:n/comments`;
 * - with the same installation token, backed by the real git repository given to
 *   `addGitRepository` (git plumbing on it; 404 for a repository without one), what opening a pull
 *   request through GitHub's Git Data API takes, under `/api/v3/repos/:owner/:repo`:
 *   `GET contents/:path?ref=` (a file as `{type: "file", encoding: "base64", content, sha, size,
 *   name, path}`; 404 for a missing path or a directory); `GET git/ref/heads/:branch` (one ref,
 *   `{ref, object: {sha, type}}`); `GET git/commits/:sha`; `POST git/trees` (`base_tree` and
 *   `tree: [{path, mode, type: "blob", content | sha}]`, nested paths, `sha: null` deleting; 422
 *   for an invalid `base_tree`, entry or deletion of a missing path); `POST git/commits`
 *   (`{message, tree, parents, author?, committer?}`); `POST git/refs` (422 `Reference already
 *   exists`); `PATCH git/refs/heads/:branch` (`{sha, force?}`, 422 `Update is not a fast
 *   forward`), `DELETE git/refs/heads/:branch`; `POST pulls` (`{title, head, base, body?,
 *   draft?}` opens the next pull request number as the App's bot, its files left for the test to
 *   set with `setPull`; 422 when the head or base branch is missing, when the head has no commits
 *   over the base, or when an open pull request from that head into that base exists); `GET
 *   pulls?state=&head=owner:branch&base=` (newest first, paginated). `GET branches/:branch` falls
 *   back on the git repository for a branch never set with `setBranch`; moving a branch through
 *   these routes moves the head of the open pull requests from it;
 * - with an installation token, `POST /api/graphql`: the `reviewThreads(first:, after:)` query and
 *   the `resolveReviewThread`/`unresolveReviewThread` mutations, recognized by those field names,
 *   with NOT_FOUND and pagination errors in `errors` and status 200, as GitHub answers them; a
 *   comment's id as `fullDatabaseId` (GitHub's BigInt scalar, a string), and the deprecated 32-bit
 *   `databaseId` of an id past 2^31 as GitHub's "Int cannot represent" error;
 * - every id it issues (reviews, comments, threads, check runs, ...) above 2^32, as github.com's are;
 * - its REST answers with every field GitHub's description requires of them (accounts as
 *   `simple-user`, full repositories, `_links`, check runs with their suite, App and pull
 *   requests, ...): API urls on the REST base the client reached, timestamps in ISO 8601;
 * - git's smart HTTP protocol for the repositories given a real bare repository, at
 *   `/:owner/:name.git`: `GET info/refs?service=git-upload-pack` and `POST git-upload-pack` (clone
 *   and fetch), with HTTP Basic whose password is an installation token reaching the repository
 *   (401 with `WWW-Authenticate` without one, 404 `Repository not found.` where it does not
 *   reach); `git-receive-pack` (a push) answers 403.
 * Every request is checked against GitHub's published descriptions (GithubDescription): one that
 * breaks them is answered 422 (a GraphQL error), and fails the test when the fake closes.
 * Every request is recorded, and tests can fail the next calls matching a method and path, or
 * carry them out and hold the answer back.
 */
import { createHash, createPublicKey, randomBytes, verify } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer, Predicate } from "effect"
import { graphqlRequestViolations, restRequestViolations } from "./GithubDescription.ts"
import {
  type FakeGithubPullFile,
  type GitCommit,
  type GitTreeChange,
  gitCommitsAhead,
  gitCommitTree,
  gitDeleteRef,
  gitIsAncestor,
  gitIsValidRefName,
  gitListTree,
  gitObjectType,
  gitReadBlob,
  gitReadCommit,
  gitRefs,
  gitResolveCommit,
  gitTreeEntry,
  gitUpdateRef,
  gitWriteTree,
  isGitSha
} from "./GitRepository.ts"
import { serveGitSmartHttp } from "./GitSmartHttp.ts"

export type { FakeGithubPullFile }

/**
 * Checks a request against GitHub's own descriptions: REST under `/api/v3` against the OpenAPI
 * description, `POST /api/graphql` against the GraphQL schema (deprecated fields included); OAuth
 * and git's smart HTTP are not described there and pass.
 */
const describedViolations = (method: string, url: URL, body: string): ReadonlyArray<string> => {
  const parsed = body === "" ? undefined : parseJson(body)
  if (url.pathname === "/api/graphql" && method === "POST") {
    const query = Predicate.isObject(parsed) && typeof parsed.query === "string" ? parsed.query : ""
    const variables = Predicate.isObject(parsed) && Predicate.isObject(parsed.variables) ? parsed.variables : {}
    return graphqlRequestViolations({ query, variables }).map((violation) => `GraphQL: ${violation}`)
  }
  if (!url.pathname.startsWith("/api/v3/")) return []
  return restRequestViolations({ method, pathname: url.pathname, search: url.search, body: parsed })
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

export interface FakeGithubUser {
  readonly id: number
  readonly login: string
  readonly name: string | null
  readonly avatar_url: string
  readonly installations: ReadonlyArray<{
    readonly id: number
    readonly account: { readonly id: number; readonly login: string; readonly type: "User" | "Organization" }
  }>
  /** Role per GitHub organization login; an organization missing here answers 404. */
  readonly orgRoles: Readonly<Record<string, "admin" | "member">>
}

export interface FakeGithubApp {
  readonly clientId: string
  readonly clientSecret: string
  /** The App id and its public key (PEM): JWTs the App signs are accepted. */
  readonly appId?: number
  readonly publicKey?: string
  /** What its installations post as, `<slug>[bot]`; `bosun` unless given. */
  readonly slug?: string
}

export interface FakeGithubInstallation {
  readonly id: number
  readonly appId: number
  readonly account: { readonly id: number; readonly login: string; readonly type: "User" | "Organization" }
  /** `owner/name` of each repository it reaches. */
  readonly repositories: ReadonlyArray<string>
}

export interface FakeGithubPull {
  readonly number: number
  readonly head: { readonly sha: string; readonly ref: string }
  readonly base: { readonly sha: string; readonly ref: string }
  readonly title: string
  readonly body: string | null
  readonly draft: boolean
  readonly state: "open" | "closed"
  readonly user: { readonly login: string; readonly type: "User" | "Bot" }
  /** In GitHub's order (the files endpoint pages through them as given). */
  readonly files: ReadonlyArray<FakeGithubPullFile>
}

export interface FakeGithubAccount {
  readonly login: string
  readonly id: number
  readonly type: "User" | "Bot"
}

export interface FakeGithubReviewComment {
  readonly id: number
  readonly node_id: string
  readonly pull_request_review_id: number
  /** The comment that opened the thread, for a reply. */
  readonly in_reply_to_id: number | null
  readonly path: string
  readonly line: number
  readonly start_line: number | null
  readonly side: "LEFT" | "RIGHT"
  readonly start_side: "LEFT" | "RIGHT" | null
  /** Position of `line` in the file's patch (1 is the line below the first `@@`). */
  readonly position: number
  readonly diff_hunk: string
  readonly commit_id: string
  readonly body: string
  readonly user: FakeGithubAccount
  readonly created_at: string
}

export interface FakeGithubReview {
  readonly id: number
  readonly node_id: string
  readonly body: string
  readonly commit_id: string
  /** What was posted (`COMMENT`, `APPROVE`, `REQUEST_CHANGES`; null for a pending review). */
  readonly event: string | null
  readonly state: "COMMENTED" | "APPROVED" | "CHANGES_REQUESTED" | "PENDING"
  readonly user: FakeGithubAccount
  readonly submitted_at: string
  readonly comments: ReadonlyArray<FakeGithubReviewComment>
}

export interface FakeGithubThread {
  /** The GraphQL node id `resolveReviewThread` takes. */
  readonly id: string
  readonly isResolved: boolean
  /** REST ids of its comments, the one that opened it first. */
  readonly commentIds: ReadonlyArray<number>
}

export interface FakeGithubCheckRun {
  readonly id: number
  readonly node_id: string
  readonly name: string
  readonly head_sha: string
  readonly external_id: string | null
  readonly status: string
  readonly conclusion: string | null
  readonly details_url: string | null
  readonly started_at: string
  readonly completed_at: string | null
  readonly output: {
    readonly title: string | null
    readonly summary: string | null
    readonly text: string | null
    readonly annotations_count: number
  }
  readonly app: { readonly id: number; readonly slug: string }
}

export interface FakeGithubIssueComment {
  readonly id: number
  readonly node_id: string
  readonly body: string
  readonly user: FakeGithubAccount
  readonly created_at: string
}

/** The next `times` (1 unless given) requests with this method whose path matches fail with `status`. */
export interface FakeGithubFailure {
  readonly method: string
  readonly path: RegExp
  readonly status: number
  readonly times?: number
  /** Headers of the failing answer (`Retry-After`, `X-RateLimit-*`). */
  readonly headers?: Readonly<Record<string, string>>
  /** GitHub's `message`; the status's reason phrase when absent. */
  readonly message?: string
  /** The whole answer instead (e.g. a GraphQL answer with `errors`, status 200). */
  readonly body?: unknown
}

/** A call GitHub carries out at once but answers late (a client that dies before the answer never learns of it). */
export interface FakeGithubDelay {
  readonly method: string
  readonly path: RegExp
  readonly milliseconds: number
  readonly times?: number
}

/** The App id a JWT claims, when its RS256 signature checks out under that App's key and it has not expired. */
const verifyAppJwt = (authorization: string | undefined, publicKeys: ReadonlyMap<number, string>) => {
  const jwt = /^bearer (.+)$/i.exec(authorization ?? "")?.[1]
  const [header, payload, signature] = jwt?.split(".") ?? []
  if (header === undefined || payload === undefined || signature === undefined) return undefined
  const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { iss?: unknown; exp?: unknown }
  const appId = Number(claims.iss)
  const key = publicKeys.get(appId)
  if (key === undefined || typeof claims.exp !== "number" || claims.exp * 1000 < Date.now()) return undefined
  const valid = verify(
    "RSA-SHA256",
    Buffer.from(`${header}.${payload}`),
    createPublicKey(key),
    Buffer.from(signature, "base64url")
  )
  return valid ? appId : undefined
}

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  /** The query string without its `?` (empty when there is none). */
  readonly query: string
  readonly authorization: string | undefined
  readonly body: string
}

/** The raw bytes of the body: git's requests are binary (and may be gzip-compressed). */
const readBody = (req: IncomingMessage) =>
  new Promise<Buffer>((resolve) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => resolve(Buffer.concat(chunks)))
  })

/** A JSON body as an object; anything else (no body, an array, bad JSON) reads as empty. */
const parseObject = (body: string): { readonly [key: string]: unknown } => {
  if (body === "") return {}
  const parsed: unknown = JSON.parse(body)
  return Predicate.isObject(parsed) ? parsed : {}
}

const timestamp = () => new Date().toISOString().replace(/\.\d{3}Z$/, "Z")

/** GitHub-looking node ids: a type prefix and an opaque suffix. */
const nodeId = (prefix: string, id: number) => `${prefix}_kwDO${Buffer.from(String(id)).toString("base64url")}`

/** A stable numeric id for a login, so the same user always has the same id. */
const accountId = (login: string) => Number.parseInt(createHash("sha1").update(login).digest("hex").slice(0, 7), 16)

/** When the fake's accounts, Apps, installations and repositories were made: long before any test's calls. */
const CREATED_AT = "2023-06-01T12:00:00Z"

/** What a review App installed for Bosun may do and hears about, as GitHub lists an App's grants. */
const APP_PERMISSIONS = {
  checks: "write",
  contents: "write",
  issues: "write",
  metadata: "read",
  pull_requests: "write"
}
const APP_EVENTS = ["check_run", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment"]

type AccountRef = { readonly login: string; readonly id: number; readonly type: string }

/** An account as GitHub's `simple-user`, its API urls under the REST base `api`; a bot's page is its App's. */
const simpleUser = (api: string, account: AccountRef) => {
  const url = `${api}/users/${encodeURIComponent(account.login)}`
  return {
    login: account.login,
    id: account.id,
    node_id: Buffer.from(`${account.type}:${account.id}`).toString("base64"),
    avatar_url: `https://avatars.githubusercontent.com/${account.type === "Bot" ? "in" : "u"}/${account.id}?v=4`,
    gravatar_id: "",
    url,
    html_url:
      account.type === "Bot"
        ? `https://github.com/apps/${account.login.replace(/\[bot\]$/, "")}`
        : `https://github.com/${account.login}`,
    followers_url: `${url}/followers`,
    following_url: `${url}/following{/other_user}`,
    gists_url: `${url}/gists{/gist_id}`,
    starred_url: `${url}/starred{/owner}{/repo}`,
    subscriptions_url: `${url}/subscriptions`,
    organizations_url: `${url}/orgs`,
    repos_url: `${url}/repos`,
    events_url: `${url}/events{/privacy}`,
    received_events_url: `${url}/received_events`,
    type: account.type,
    user_view_type: "public",
    site_admin: false
  }
}

/** An account's public profile (`public-user`, as `GET /users/{username}` answers it). */
const publicUser = (api: string, account: AccountRef, name: string | null) => ({
  ...simpleUser(api, account),
  name,
  company: null,
  blog: "",
  location: null,
  email: null,
  hireable: null,
  bio: null,
  twitter_username: null,
  public_repos: 0,
  public_gists: 0,
  followers: 0,
  following: 0,
  created_at: CREATED_AT,
  updated_at: CREATED_AT
})

/** An organization as GitHub's `organization-simple`. */
const organizationSimple = (api: string, organization: { readonly login: string; readonly id: number }) => {
  const url = `${api}/orgs/${encodeURIComponent(organization.login)}`
  return {
    login: organization.login,
    id: organization.id,
    node_id: Buffer.from(`Organization:${organization.id}`).toString("base64"),
    url,
    repos_url: `${url}/repos`,
    events_url: `${url}/events`,
    hooks_url: `${url}/hooks`,
    issues_url: `${url}/issues`,
    members_url: `${url}/members{/member}`,
    public_members_url: `${url}/public_members{/member}`,
    avatar_url: `https://avatars.githubusercontent.com/u/${organization.id}?v=4`,
    description: null
  }
}

/** A GitHub App as GitHub's `integration`, owned by `owner`. */
const integrationJson = (api: string, app: { readonly id: number; readonly slug: string }, owner: AccountRef) => ({
  id: app.id,
  slug: app.slug,
  node_id: `A_kwDO${Buffer.from(String(app.id)).toString("base64url")}`,
  owner: simpleUser(api, owner),
  name: app.slug,
  description: null,
  external_url: `https://github.com/apps/${app.slug}`,
  html_url: `https://github.com/apps/${app.slug}`,
  created_at: CREATED_AT,
  updated_at: CREATED_AT,
  permissions: APP_PERMISSIONS,
  events: APP_EVENTS
})

/** An installation as GitHub's `installation`. */
const installationJson = (
  api: string,
  installation: { readonly id: number; readonly appId: number; readonly account: AccountRef },
  slug: string
) => ({
  id: installation.id,
  account: simpleUser(api, installation.account),
  repository_selection: "selected",
  access_tokens_url: `${api}/app/installations/${installation.id}/access_tokens`,
  repositories_url: `${api}/installation/repositories`,
  html_url:
    installation.account.type === "Organization"
      ? `https://github.com/organizations/${installation.account.login}/settings/installations/${installation.id}`
      : `https://github.com/settings/installations/${installation.id}`,
  app_id: installation.appId,
  app_slug: slug,
  target_id: installation.account.id,
  target_type: installation.account.type,
  permissions: APP_PERMISSIONS,
  events: APP_EVENTS,
  created_at: CREATED_AT,
  updated_at: CREATED_AT,
  single_file_name: null,
  has_multiple_single_files: false,
  single_file_paths: [],
  suspended_by: null,
  suspended_at: null
})

/**
 * `owner/name` as GitHub's `repository`, owned by `owner`: API urls under `api`, cloned from the
 * fake's own git over HTTP (`/owner/name.git` next to `/api/v3`).
 */
const repositoryJson = (api: string, repository: string, owner: AccountRef) => {
  const url = `${api}/repos/${repository}`
  const html = `https://github.com/${repository}`
  return {
    id: accountId(repository),
    node_id: `R_kgDO${Buffer.from(repository).toString("base64url")}`,
    name: repository.slice(repository.indexOf("/") + 1),
    full_name: repository,
    owner: simpleUser(api, owner),
    private: true,
    visibility: "private",
    html_url: html,
    description: null,
    fork: false,
    url,
    archive_url: `${url}/{archive_format}{/ref}`,
    assignees_url: `${url}/assignees{/user}`,
    blobs_url: `${url}/git/blobs{/sha}`,
    branches_url: `${url}/branches{/branch}`,
    collaborators_url: `${url}/collaborators{/collaborator}`,
    comments_url: `${url}/comments{/number}`,
    commits_url: `${url}/commits{/sha}`,
    compare_url: `${url}/compare/{base}...{head}`,
    contents_url: `${url}/contents/{+path}`,
    contributors_url: `${url}/contributors`,
    deployments_url: `${url}/deployments`,
    downloads_url: `${url}/downloads`,
    events_url: `${url}/events`,
    forks_url: `${url}/forks`,
    git_commits_url: `${url}/git/commits{/sha}`,
    git_refs_url: `${url}/git/refs{/sha}`,
    git_tags_url: `${url}/git/tags{/sha}`,
    git_url: `git://github.com/${repository}.git`,
    issue_comment_url: `${url}/issues/comments{/number}`,
    issue_events_url: `${url}/issues/events{/number}`,
    issues_url: `${url}/issues{/number}`,
    keys_url: `${url}/keys{/key_id}`,
    labels_url: `${url}/labels{/name}`,
    languages_url: `${url}/languages`,
    merges_url: `${url}/merges`,
    milestones_url: `${url}/milestones{/number}`,
    notifications_url: `${url}/notifications{?since,all,participating}`,
    pulls_url: `${url}/pulls{/number}`,
    releases_url: `${url}/releases{/id}`,
    ssh_url: `git@github.com:${repository}.git`,
    stargazers_url: `${url}/stargazers`,
    statuses_url: `${url}/statuses/{sha}`,
    subscribers_url: `${url}/subscribers`,
    subscription_url: `${url}/subscription`,
    tags_url: `${url}/tags`,
    teams_url: `${url}/teams`,
    trees_url: `${url}/git/trees{/sha}`,
    clone_url: `${api.replace(/\/api\/v3$/, "")}/${repository}.git`,
    mirror_url: null,
    hooks_url: `${url}/hooks`,
    svn_url: html,
    homepage: null,
    language: null,
    forks: 0,
    forks_count: 0,
    stargazers_count: 0,
    watchers: 0,
    watchers_count: 0,
    size: 0,
    default_branch: "main",
    open_issues: 0,
    open_issues_count: 0,
    is_template: false,
    topics: [],
    has_issues: true,
    has_projects: true,
    has_wiki: true,
    has_pages: false,
    has_downloads: true,
    archived: false,
    disabled: false,
    license: null,
    pushed_at: CREATED_AT,
    created_at: CREATED_AT,
    updated_at: CREATED_AT
  }
}

/**
 * Commit `sha` of `owner/name` as GitHub's `commit` (what branches and comparisons show), read from
 * `commit` when the git repository has it; a made-up sha (`setBranch`) gets made-up details.
 */
const commitDetailsJson = (api: string, repository: string, sha: string, commit: GitCommit | undefined) => {
  const url = `${api}/repos/${repository}/commits/${sha}`
  const someone = { name: "octocat", email: "octocat@users.noreply.github.com", date: CREATED_AT }
  const tree = commit?.tree ?? createHash("sha1").update(`tree of ${sha}`).digest("hex")
  return {
    url,
    sha,
    node_id: `C_kwDO${Buffer.from(sha).toString("base64url")}`,
    html_url: `https://github.com/${repository}/commit/${sha}`,
    comments_url: `${url}/comments`,
    commit: {
      url: `${api}/repos/${repository}/git/commits/${sha}`,
      author: commit?.author ?? someone,
      committer: commit?.committer ?? someone,
      message: commit?.message ?? "",
      comment_count: 0,
      tree: { sha: tree, url: `${api}/repos/${repository}/git/trees/${tree}` },
      verification: { verified: false, reason: "unsigned", signature: null, payload: null, verified_at: null }
    },
    // GitHub's account for the commit's email; none is known here.
    author: null,
    committer: null,
    parents: (commit?.parents ?? []).map((parent) => ({
      sha: parent,
      url: `${api}/repos/${repository}/commits/${parent}`,
      html_url: `https://github.com/${repository}/commit/${parent}`
    }))
  }
}

/**
 * The lines of a unified diff a review comment may sit on, by `RIGHT:<new line>` (added and
 * context lines) and `LEFT:<old line>` (removed and context lines), each with its position (the
 * line's index in the patch: the first `@@` is 0) and the index of its hunk's header.
 */
const diffLines = (patch: string) => {
  const lines = new Map<string, { readonly position: number; readonly hunk: number }>()
  let oldLine = 0
  let newLine = 0
  let hunk = -1
  patch.split("\n").forEach((text, position) => {
    const header = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(text)
    if (header !== null) {
      oldLine = Number(header[1])
      newLine = Number(header[2])
      hunk = position
      return
    }
    if (hunk < 0 || text.startsWith("\\")) return
    if (text.startsWith("+")) {
      lines.set(`RIGHT:${newLine++}`, { position, hunk })
    } else if (text.startsWith("-")) {
      lines.set(`LEFT:${oldLine++}`, { position, hunk })
    } else {
      lines.set(`RIGHT:${newLine++}`, { position, hunk })
      lines.set(`LEFT:${oldLine++}`, { position, hunk })
    }
  })
  return lines
}

const REVIEW_STATES: Readonly<Record<string, FakeGithubReview["state"]>> = {
  COMMENT: "COMMENTED",
  APPROVE: "APPROVED",
  REQUEST_CHANGES: "CHANGES_REQUESTED"
}

/** The value of `name` among the arguments of `field(...)` in a GraphQL document: a literal, or the variable it names. */
const graphqlArgument = (
  query: string,
  field: string,
  name: string,
  variables: { readonly [key: string]: unknown }
): unknown => {
  const args = new RegExp(`\\b${field}\\s*\\(([^)]*)\\)`).exec(query)?.[1] ?? ""
  const value = new RegExp(`\\b${name}\\s*:\\s*(\\$\\w+|"(?:[^"\\\\]|\\\\.)*"|-?\\d+|true|false|null)`).exec(args)?.[1]
  if (value === undefined) return undefined
  return value.startsWith("$") ? variables[value.slice(1)] : JSON.parse(value)
}

const cursorOf = (index: number) => Buffer.from(`cursor:v2:${index}`).toString("base64")
const indexOfCursor = (cursor: unknown) =>
  typeof cursor === "string"
    ? Number(/^cursor:v2:(\d+)$/.exec(Buffer.from(cursor, "base64").toString())?.[1] ?? -1)
    : -1

interface PullRecord {
  pull: FakeGithubPull
  readonly id: number
  /** When it was opened (ISO 8601). */
  readonly createdAt: string
  readonly reviews: Array<FakeGithubReview>
  readonly threads: Array<{ readonly id: string; isResolved: boolean; readonly commentIds: Array<number> }>
  readonly issueComments: Array<FakeGithubIssueComment>
}

export class FakeGithub extends Context.Service<
  FakeGithub,
  {
    /** `http://127.0.0.1:<port>`: the OAuth host; the REST API is `${url}/api/v3`. */
    readonly url: string
    readonly apiUrl: string
    readonly requests: ReadonlyArray<RecordedRequest>
    /** Registers the App whose credentials the token exchange (and, with a key, its JWTs) accepts. */
    readonly addApp: (app: FakeGithubApp) => void
    /** Installs an App on an account's repositories. */
    readonly addInstallation: (installation: FakeGithubInstallation) => void
    /** Points `branch` of `owner/name` at `sha`. */
    readonly setBranch: (repository: string, branch: string, sha: string) => void
    /**
     * Opens pull request `pull.number` of `owner/name`, or updates it: the fields given replace
     * theirs, the others keep their value (a new pull request needs `head` and `base`; the rest
     * default to an open, non-draft pull request by `octocat` without files). Reviews, threads
     * and comments stay across updates.
     */
    readonly setPull: (
      repository: string,
      pull: Pick<FakeGithubPull, "number"> & Partial<Omit<FakeGithubPull, "number">>
    ) => void
    /** The pull request's description as it stands (after any `PATCH`); undefined for an unknown pull request. */
    readonly pullBody: (repository: string, number: number) => string | null | undefined
    /** Its reviews, oldest first, each with the comments posted with it. */
    readonly reviews: (repository: string, number: number) => ReadonlyArray<FakeGithubReview>
    /** Its review threads, oldest first. */
    readonly threads: (repository: string, number: number) => ReadonlyArray<FakeGithubThread>
    /** Its conversation comments, oldest first. */
    readonly issueComments: (repository: string, number: number) => ReadonlyArray<FakeGithubIssueComment>
    /** Every check run created on the repository, oldest first. */
    readonly checkRuns: (repository: string) => ReadonlyArray<FakeGithubCheckRun>
    /** The states check run `id` went through, in order (`in_progress`, then e.g. `success`). */
    readonly checkRunStates: (id: number) => ReadonlyArray<string>
    /** A person's reply to review comment `commentId`, added to its thread as GitHub does; answers the reply's id. */
    readonly addReply: (
      repository: string,
      number: number,
      commentId: number,
      reply: { readonly login: string; readonly body: string }
    ) => number
    /** How many installation tokens were issued so far. */
    readonly issuedInstallationTokens: () => number
    /** A one-time authorization code for `user`, as GitHub hands it to the callback. */
    readonly issueCode: (clientId: string, user: FakeGithubUser) => string
    /** What `GET .../compare/{base}...{head}` lists as changed (unset pairs answer 404, as for an unknown commit). */
    readonly setCompare: (repository: string, base: string, head: string, filenames: ReadonlyArray<string>) => void
    /** Serves the bare git repository at `bareDir` as `owner/name` over smart HTTP (see `makeGitRepository`). */
    readonly addGitRepository: (repository: string, bareDir: string) => void
    /** The pull requests opened through `POST pulls`, oldest first, as they stand now. */
    readonly createdPulls: (repository: string) => ReadonlyArray<FakeGithubPull>
    /**
     * The text of the file at `path` in `ref` (a branch, a tag, a full ref name or a sha) of the
     * git repository given to `addGitRepository`; undefined when the ref or the file is missing.
     */
    readonly fileAt: (repository: string, ref: string, path: string) => Effect.Effect<string | undefined>
    /** Every ref of that git repository and the sha it points at, by full name (`refs/heads/main`). */
    readonly refs: (repository: string) => Effect.Effect<Readonly<Record<string, string>>>
    /** Fail every REST and git call with this status (simulating an outage); undefined to stop. */
    readonly failWith: (status: number | undefined) => void
    /** Fail the next matching calls (any route), e.g. `{ method: "POST", path: /\/reviews$/, status: 502 }`. */
    readonly failNext: (failure: FakeGithubFailure) => void
    /** Each request so far that broke GitHub's published REST or GraphQL description, and how. */
    readonly violations: () => ReadonlyArray<string>
    /** Carry out the next matching calls but hold their answers back (e.g. to kill the client in between). */
    readonly delayNext: (delay: FakeGithubDelay) => void
  }
>()("bosun/testing/FakeGithub") {
  static readonly layer = Layer.effect(
    FakeGithub,
    Effect.acquireRelease(
      Effect.promise(async () => {
        const apps = new Map<string, string>()
        const appKeys = new Map<number, string>()
        const appSlugs = new Map<number, string>()
        const installations = new Map<number, FakeGithubInstallation>()
        const installationTokens = new Map<string, FakeGithubInstallation>()
        const branches = new Map<string, string>()
        const codes = new Map<string, { clientId: string; user: FakeGithubUser }>()
        const tokens = new Map<string, FakeGithubUser>()
        const requests: Array<RecordedRequest> = []
        const pulls = new Map<string, PullRecord>()
        const checkRuns = new Map<string, Array<FakeGithubCheckRun>>()
        /** Each check run's states in order: its status while running, then its conclusion. */
        const checkRunStates = new Map<number, Array<string>>()
        /** GitHub's check suite of each App on each commit of a repository, by `repository#appId#sha`. */
        const checkSuites = new Map<string, number>()
        const compares = new Map<string, ReadonlyArray<string>>()
        const gitRepositories = new Map<string, string>()
        /** By repository, the numbers of the pull requests opened through `POST pulls`. */
        const createdPullNumbers = new Map<string, Array<number>>()
        const delays: Array<{
          readonly method: string
          readonly path: RegExp
          readonly milliseconds: number
          left: number
        }> = []
        const failures: Array<{
          readonly method: string
          readonly path: RegExp
          readonly status: number
          readonly headers: Readonly<Record<string, string>>
          readonly message: string | undefined
          readonly body: unknown
          left: number
        }> = []
        /** Requests that broke GitHub's published descriptions: each fails the test that made it. */
        const violations: Array<string> = []
        // GitHub's ids are unique across kinds; one counter keeps them apart here too. They start
        // above 2^32, as github.com's do now: a client that keeps them in 32 bits breaks here first.
        let lastId = 2 ** 32 + 1_000_000
        const nextId = () => ++lastId
        let failure: number | undefined

        const pullOf = (repository: string, number: number) => pulls.get(`${repository}#${number}`)
        /** The pull requests of `owner/name`, by number. */
        const pullsOf = (repository: string) =>
          [...pulls.entries()]
            .filter(([key]) => key.slice(0, key.lastIndexOf("#")) === repository)
            .map(([, record]) => record)
            .sort((a, b) => a.pull.number - b.pull.number)
        /**
         * Where `branch` points: as set with `setBranch` (which overrides), else in the repository's
         * git repository (where the Git Data routes move branches).
         */
        const branchSha = async (repository: string, branch: string) => {
          const set = branches.get(`${repository}#${branch}`)
          if (set !== undefined) return set
          const dir = gitRepositories.get(repository)
          if (dir === undefined || branch.startsWith("refs/")) return undefined
          return (await gitRefs(dir))[`refs/heads/${branch}`]
        }
        const account = (login: string, type: "User" | "Bot"): FakeGithubAccount => ({
          login,
          id: accountId(login),
          type
        })
        /** The git repository given for `owner/name`; a test asking about another has a bug. */
        const gitRepositoryOf = (repository: string) => {
          const dir = gitRepositories.get(repository)
          if (dir === undefined) throw new Error(`FakeGithub: no git repository was added for ${repository}`)
          return dir
        }
        const botOf = (installation: FakeGithubInstallation) =>
          account(`${appSlugs.get(installation.appId) ?? "bosun"}[bot]`, "Bot")
        /** The App as GitHub's `integration`: owned by the account of its first installation (who registered it). */
        const appJson = (api: string, appId: number) => {
          const slug = appSlugs.get(appId) ?? "bosun"
          const owner = [...installations.values()].find((candidate) => candidate.appId === appId)?.account
          return integrationJson(
            api,
            { id: appId, slug },
            owner ?? { login: slug, id: accountId(slug), type: "Organization" }
          )
        }
        /** The check suite of `appId` on `sha`, made with the App's first check run there. */
        const checkSuiteOf = (repository: string, appId: number, sha: string) => {
          const key = `${repository}#${appId}#${sha}`
          const found = checkSuites.get(key) ?? nextId()
          checkSuites.set(key, found)
          return found
        }
        /** Commit `sha` of `owner/name` as GitHub's `commit`, from its git repository when it has one. */
        const commitDetails = async (api: string, repository: string, sha: string) => {
          const dir = gitRepositories.get(repository)
          return commitDetailsJson(api, repository, sha, dir === undefined ? undefined : await gitReadCommit(dir, sha))
        }

        /**
         * Replies to review comment `commentId` of the pull request: like GitHub, a reply is a
         * comment of a new review of its own, on the line of the thread's first comment.
         */
        const reply = (record: PullRecord, commentId: number, user: FakeGithubAccount, body: string) => {
          const thread = record.threads.find((candidate) => candidate.commentIds.includes(commentId))
          const first = record.reviews
            .flatMap((review) => review.comments)
            .find((comment) => comment.id === thread?.commentIds[0])
          if (thread === undefined || first === undefined) return undefined
          const reviewId = nextId()
          const id = nextId()
          const comment: FakeGithubReviewComment = {
            ...first,
            id,
            node_id: nodeId("PRRC", id),
            pull_request_review_id: reviewId,
            in_reply_to_id: first.id,
            body,
            user,
            created_at: timestamp()
          }
          record.reviews.push({
            id: reviewId,
            node_id: nodeId("PRR", reviewId),
            body: "",
            commit_id: record.pull.head.sha,
            event: "COMMENT",
            state: "COMMENTED",
            user,
            submitted_at: comment.created_at,
            comments: [comment]
          })
          thread.commentIds.push(id)
          return comment
        }

        const handle = async (req: IncomingMessage, res: ServerResponse) => {
          const raw = await readBody(req)
          const body = raw.toString()
          const url = new URL(req.url ?? "/", "http://fake")
          const method = req.method ?? ""
          requests.push({
            method,
            path: url.pathname,
            query: url.search.replace(/^\?/, ""),
            authorization: req.headers.authorization,
            body
          })
          const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
            res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers })
            res.end(JSON.stringify(value))
          }
          /** The REST base the client reached, what the urls in answers are built on. */
          const api = `http://${req.headers.host ?? "127.0.0.1"}/api/v3`
          const delayed = delays.find((candidate) => candidate.method === method && candidate.path.test(url.pathname))
          if (delayed !== undefined) {
            delayed.left -= 1
            if (delayed.left <= 0) delays.splice(delays.indexOf(delayed), 1)
            const end = res.end.bind(res)
            // The call's effects happen now; only the answer waits.
            res.end = ((...args: Parameters<typeof end>) => {
              setTimeout(() => end(...args), delayed.milliseconds)
              return res
            }) as typeof res.end
          }
          const planned = failures.find((candidate) => candidate.method === method && candidate.path.test(url.pathname))
          if (planned !== undefined) {
            planned.left -= 1
            if (planned.left <= 0) failures.splice(failures.indexOf(planned), 1)
            return json(
              planned.status,
              planned.body ?? {
                message: planned.message ?? STATUS_CODES[planned.status] ?? "Error",
                documentation_url: "https://docs.github.com/rest"
              },
              planned.headers
            )
          }
          const broken = describedViolations(method, url, body)
          if (broken.length > 0) {
            violations.push(...broken)
            // GitHub answers a request its description does not allow with 422 (or an error in a
            // GraphQL answer); the test that made it fails when the fake is closed too.
            return url.pathname === "/api/graphql"
              ? json(200, { errors: broken.map((message) => ({ message })) })
              : json(422, { message: `Invalid request.\n\n${broken.join("\n")}` })
          }
          if (method === "POST" && url.pathname === "/login/oauth/access_token") {
            const params: Record<string, string> = req.headers["content-type"]?.includes("json")
              ? (JSON.parse(body) as Record<string, string>)
              : Object.fromEntries(new URLSearchParams(body))
            const issued = codes.get(params.code ?? "")
            if (
              issued === undefined ||
              issued.clientId !== params.client_id ||
              apps.get(params.client_id ?? "") !== params.client_secret
            ) {
              return json(200, {
                error: "bad_verification_code",
                error_description: "The code passed is incorrect or expired.",
                error_uri: "https://docs.github.com/apps/troubleshooting"
              })
            }
            codes.delete(params.code ?? "")
            const token = `ghu_${randomBytes(18).toString("hex")}`
            tokens.set(token, issued.user)
            return json(200, { access_token: token, token_type: "bearer", scope: "" })
          }
          if (failure !== undefined) return json(failure, { message: "Service unavailable" })
          const git = /^\/([^/]+)\/([^/]+?)(?:\.git)?\/(info\/refs|git-upload-pack|git-receive-pack)$/.exec(
            url.pathname
          )
          if (git !== null) {
            const text = (status: number, message: string, headers: Record<string, string> = {}) => {
              res.writeHead(status, { "content-type": "text/plain; charset=utf-8", ...headers })
              res.end(`${message}\n`)
            }
            // Like GitHub: the user name is ignored (`x-access-token` by convention), the password is the token.
            const basic = /^basic (.+)$/i.exec(req.headers.authorization ?? "")?.[1]
            const credentials = basic === undefined ? undefined : Buffer.from(basic, "base64").toString()
            const colon = credentials?.indexOf(":") ?? -1
            const installation =
              credentials === undefined || colon < 0 ? undefined : installationTokens.get(credentials.slice(colon + 1))
            if (installation === undefined) {
              return text(401, "Invalid username or token.", { "www-authenticate": 'Basic realm="GitHub"' })
            }
            const repository = `${decodeURIComponent(git[1] ?? "")}/${decodeURIComponent(git[2] ?? "")}`
            const dir = gitRepositories.get(repository)
            if (dir === undefined || !installation.repositories.includes(repository)) {
              return text(404, "Repository not found.")
            }
            return serveGitSmartHttp(
              dir,
              {
                method,
                service: git[3] ?? "",
                query: url.search.replace(/^\?/, ""),
                headers: req.headers,
                body: raw,
                remoteUser: credentials?.slice(0, colon) ?? ""
              },
              res
            )
          }
          const repoInstallation = /^\/api\/v3\/repos\/([^/]+)\/([^/]+)\/installation$/.exec(url.pathname)
          const accessTokens = /^\/api\/v3\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname)
          const theApp = url.pathname === "/api/v3/app"
          if (repoInstallation !== null || accessTokens !== null || theApp) {
            const appId = verifyAppJwt(req.headers.authorization, appKeys)
            if (appId === undefined) {
              return json(401, { message: "A JSON web token could not be decoded" })
            }
            if (theApp) {
              if (method !== "GET") return json(404, { message: "Not Found" })
              const installationsCount = [...installations.values()].filter((each) => each.appId === appId).length
              return json(200, { ...appJson(api, appId), installations_count: installationsCount })
            }
            if (repoInstallation !== null && method === "GET") {
              const repository = `${repoInstallation[1]}/${repoInstallation[2]}`
              const found = [...installations.values()].find(
                (installation) => installation.appId === appId && installation.repositories.includes(repository)
              )
              if (found === undefined) return json(404, { message: "Not Found" })
              return json(200, installationJson(api, found, appSlugs.get(found.appId) ?? "bosun"))
            }
            const installation = installations.get(Number(accessTokens?.[1]))
            if (method !== "POST" || installation === undefined || installation.appId !== appId) {
              return json(404, { message: "Not Found" })
            }
            const token = `ghs_${randomBytes(18).toString("hex")}`
            installationTokens.set(token, installation)
            return json(201, {
              token,
              expires_at: new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, "Z"),
              permissions: { contents: "read", metadata: "read" },
              repository_selection: "selected"
            })
          }
          const installation = installationTokens.get(
            (req.headers.authorization ?? "").replace(/^(token|bearer) /i, "")
          )
          const branch = /^\/api\/v3\/repos\/([^/]+)\/([^/]+)\/branches\/(.+)$/.exec(url.pathname)
          if (branch !== null && method === "GET") {
            if (installation === undefined) return json(401, { message: "Bad credentials" })
            const repository = `${branch[1]}/${branch[2]}`
            const sha = await branchSha(repository, decodeURIComponent(branch[3] ?? ""))
            if (!installation.repositories.includes(repository) || sha === undefined) {
              return json(404, { message: "Branch not found" })
            }
            const name = decodeURIComponent(branch[3] ?? "")
            return json(200, {
              name,
              commit: await commitDetails(api, repository, sha),
              _links: {
                self: `${api}/repos/${repository}/branches/${name}`,
                html: `https://github.com/${repository}/tree/${name}`
              },
              protected: false,
              protection: {
                enabled: false,
                required_status_checks: { enforcement_level: "off", contexts: [], checks: [] }
              },
              protection_url: `${api}/repos/${repository}/branches/${name}/protection`
            })
          }

          /** One page of `items` by `per_page` (30 unless given, at most 100) and `page`, with GitHub's `link` header. */
          const paged = <A>(items: ReadonlyArray<A>) => {
            const perPage = Math.min(Math.max(Math.trunc(Number(url.searchParams.get("per_page") ?? 30)) || 30, 1), 100)
            const page = Math.max(Math.trunc(Number(url.searchParams.get("page") ?? 1)) || 1, 1)
            const last = Math.max(Math.ceil(items.length / perPage), 1)
            const link = (n: number, rel: string) => {
              const target = new URL(`${api}${url.pathname.replace(/^\/api\/v3/, "")}${url.search}`)
              target.searchParams.set("per_page", String(perPage))
              target.searchParams.set("page", String(n))
              return `<${target.href}>; rel="${rel}"`
            }
            const links = [
              ...(page > 1 ? [link(page - 1, "prev"), link(1, "first")] : []),
              ...(page < last ? [link(page + 1, "next"), link(last, "last")] : [])
            ]
            return {
              items: items.slice((page - 1) * perPage, page * perPage),
              headers: links.length === 0 ? {} : { link: links.join(", ") }
            }
          }
          const unprocessable = (documentation: string, ...errors: ReadonlyArray<string>) =>
            json(422, {
              message: "Unprocessable Entity",
              errors,
              documentation_url: `https://docs.github.com/rest/${documentation}`,
              status: "422"
            })

          const repoCall =
            /^\/api\/v3\/repos\/([^/]+)\/([^/]+)\/((?:pulls|commits|check-runs|issues|compare|contents|git)(?:\/.*)?)$/.exec(
              url.pathname
            )
          if (repoCall !== null) {
            if (installation === undefined) return json(401, { message: "Bad credentials" })
            const repository = `${decodeURIComponent(repoCall[1] ?? "")}/${decodeURIComponent(repoCall[2] ?? "")}`
            if (!installation.repositories.includes(repository)) return json(404, { message: "Not Found" })
            const route = repoCall[3] ?? ""
            const input = parseObject(body)
            const bot = botOf(installation)
            const pullCall = /^(?:pulls|issues)\/(\d+)(\/.*)?$/.exec(route)
            const record = pullCall === null ? undefined : pullOf(repository, Number(pullCall[1]))
            if (pullCall !== null && record === undefined) return json(404, { message: "Not Found" })
            const sub = pullCall?.[2] ?? ""
            const login = repository.slice(0, repository.indexOf("/"))
            /** The repository's owner: the installation's account, else an organization of that name. */
            const repositoryOwner: AccountRef =
              installation.account.login.toLowerCase() === login.toLowerCase()
                ? installation.account
                : { login, id: accountId(login), type: "Organization" }
            const pullJson = (pull: FakeGithubPull, id = record?.id) => {
              const url = `${api}/repos/${repository}/pulls/${pull.number}`
              const htmlUrl = `https://github.com/${repository}/pull/${pull.number}`
              const issueUrl = `${api}/repos/${repository}/issues/${pull.number}`
              const statusesUrl = `${api}/repos/${repository}/statuses/${pull.head.sha}`
              const reviewCommentUrl = `${api}/repos/${repository}/pulls/comments{/number}`
              const owning = pullOf(repository, pull.number)
              const createdAt = owning?.createdAt ?? timestamp()
              const side = (end: FakeGithubPull["head"]) => ({
                label: `${login}:${end.ref}`,
                ...end,
                user: simpleUser(api, repositoryOwner),
                repo: repositoryJson(api, repository, repositoryOwner)
              })
              return {
                url,
                id,
                node_id: nodeId("PR", id ?? 0),
                html_url: htmlUrl,
                diff_url: `${htmlUrl}.diff`,
                patch_url: `${htmlUrl}.patch`,
                issue_url: issueUrl,
                commits_url: `${url}/commits`,
                review_comments_url: `${url}/comments`,
                review_comment_url: reviewCommentUrl,
                comments_url: `${issueUrl}/comments`,
                statuses_url: statusesUrl,
                number: pull.number,
                state: pull.state,
                locked: false,
                active_lock_reason: null,
                title: pull.title,
                user: simpleUser(api, account(pull.user.login, pull.user.type)),
                body: pull.body,
                labels: [],
                milestone: null,
                created_at: createdAt,
                updated_at: createdAt,
                closed_at: pull.state === "closed" ? createdAt : null,
                merged_at: null,
                merge_commit_sha: null,
                assignee: null,
                assignees: [],
                requested_reviewers: [],
                requested_teams: [],
                draft: pull.draft,
                merged: false,
                mergeable: null,
                rebaseable: null,
                mergeable_state: "unknown",
                merged_by: null,
                head: side(pull.head),
                base: side(pull.base),
                _links: {
                  self: { href: url },
                  html: { href: htmlUrl },
                  issue: { href: issueUrl },
                  comments: { href: `${issueUrl}/comments` },
                  review_comments: { href: `${url}/comments` },
                  review_comment: { href: reviewCommentUrl },
                  commits: { href: `${url}/commits` },
                  statuses: { href: statusesUrl }
                },
                author_association: pull.user.type === "Bot" ? "NONE" : "CONTRIBUTOR",
                auto_merge: null,
                maintainer_can_modify: false,
                comments: owning?.issueComments.length ?? 0,
                review_comments: owning?.reviews.reduce((sum, review) => sum + review.comments.length, 0) ?? 0,
                commits: 1,
                changed_files: pull.files.length,
                additions: pull.files.reduce((sum, file) => sum + file.additions, 0),
                deletions: pull.files.reduce((sum, file) => sum + file.deletions, 0)
              }
            }
            const reviewJson = (review: FakeGithubReview) => ({
              id: review.id,
              node_id: review.node_id,
              user: simpleUser(api, review.user),
              body: review.body,
              state: review.state,
              html_url: `https://github.com/${repository}/pull/${pullCall?.[1]}#pullrequestreview-${review.id}`,
              pull_request_url: `${api}/repos/${repository}/pulls/${pullCall?.[1]}`,
              _links: {
                html: { href: `https://github.com/${repository}/pull/${pullCall?.[1]}#pullrequestreview-${review.id}` },
                pull_request: { href: `${api}/repos/${repository}/pulls/${pullCall?.[1]}` }
              },
              author_association: "NONE",
              submitted_at: review.submitted_at,
              commit_id: review.commit_id
            })
            // GitHub leaves `in_reply_to_id` out of a comment that opens a thread.
            const commentJson = ({ in_reply_to_id: inReplyTo, ...comment }: FakeGithubReviewComment) => ({
              url: `${api}/repos/${repository}/pulls/comments/${comment.id}`,
              ...comment,
              ...(inReplyTo === null ? {} : { in_reply_to_id: inReplyTo }),
              original_commit_id: comment.commit_id,
              original_line: comment.line,
              original_start_line: comment.start_line,
              original_position: comment.position,
              subject_type: "line",
              updated_at: comment.created_at,
              author_association: "NONE",
              user: simpleUser(api, comment.user),
              html_url: `https://github.com/${repository}/pull/${pullCall?.[1]}#discussion_r${comment.id}`,
              pull_request_url: `${api}/repos/${repository}/pulls/${pullCall?.[1]}`,
              _links: {
                self: { href: `${api}/repos/${repository}/pulls/comments/${comment.id}` },
                html: { href: `https://github.com/${repository}/pull/${pullCall?.[1]}#discussion_r${comment.id}` },
                pull_request: { href: `${api}/repos/${repository}/pulls/${pullCall?.[1]}` }
              }
            })
            const issueCommentJson = (comment: FakeGithubIssueComment) => ({
              url: `${api}/repos/${repository}/issues/comments/${comment.id}`,
              html_url: `https://github.com/${repository}/pull/${pullCall?.[1]}#issuecomment-${comment.id}`,
              issue_url: `${api}/repos/${repository}/issues/${pullCall?.[1]}`,
              ...comment,
              user: simpleUser(api, comment.user),
              updated_at: comment.created_at,
              author_association: "NONE"
            })
            const checkRunJson = (run: FakeGithubCheckRun) => ({
              ...run,
              url: `${api}/repos/${repository}/check-runs/${run.id}`,
              html_url: `https://github.com/${repository}/runs/${run.id}`,
              check_suite: { id: checkSuiteOf(repository, run.app.id, run.head_sha) },
              // The open pull requests whose head is the checked commit.
              pull_requests: pullsOf(repository)
                .filter(({ pull }) => pull.state === "open" && pull.head.sha === run.head_sha)
                .map(({ pull, id }) => ({
                  id,
                  number: pull.number,
                  url: `${api}/repos/${repository}/pulls/${pull.number}`,
                  head: {
                    ref: pull.head.ref,
                    sha: pull.head.sha,
                    repo: {
                      id: accountId(repository),
                      url: `${api}/repos/${repository}`,
                      name: repository.slice(login.length + 1)
                    }
                  },
                  base: {
                    ref: pull.base.ref,
                    sha: pull.base.sha,
                    repo: {
                      id: accountId(repository),
                      url: `${api}/repos/${repository}`,
                      name: repository.slice(login.length + 1)
                    }
                  }
                })),
              output: { ...run.output, annotations_url: `${api}/repos/${repository}/check-runs/${run.id}/annotations` },
              app: appJson(api, run.app.id)
            })

            const owner = repository.split("/")[0] ?? ""
            const dir = gitRepositories.get(repository)
            const gitApi = `${api}/repos/${repository}/git`
            /** GitHub's answer to a Git Data call it cannot carry out. */
            const invalid = (documentation: string, message: string) =>
              json(422, { message, documentation_url: `https://docs.github.com/rest/${documentation}`, status: "422" })
            /** GitHub's answer to a pull request it will not open. */
            const invalidPull = (error: Readonly<Record<string, string>>) =>
              json(422, {
                message: "Validation Failed",
                errors: [{ resource: "PullRequest", ...error }],
                documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
                status: "422"
              })
            const refJson = (ref: string, sha: string, type = "commit") => ({
              ref,
              node_id: `REF_kwDO${Buffer.from(`${repository}:${ref}`).toString("base64url")}`,
              url: `${gitApi}/${ref}`,
              object: { sha, type, url: `${gitApi}/${type}s/${sha}` }
            })
            const commitJson = (commit: GitCommit) => ({
              sha: commit.sha,
              node_id: `C_kwDO${Buffer.from(commit.sha).toString("base64url")}`,
              url: `${gitApi}/commits/${commit.sha}`,
              html_url: `https://github.com/${repository}/commit/${commit.sha}`,
              author: commit.author,
              committer: commit.committer,
              tree: { sha: commit.tree, url: `${gitApi}/trees/${commit.tree}` },
              message: commit.message,
              parents: commit.parents.map((sha) => ({
                sha,
                url: `${gitApi}/commits/${sha}`,
                html_url: `https://github.com/${repository}/commit/${sha}`
              })),
              verification: { verified: false, reason: "unsigned", signature: null, payload: null, verified_at: null }
            })
            /** As on GitHub, a push to a branch moves the head of the open pull requests from it. */
            const moveHeads = (branchName: string, sha: string) => {
              for (const candidate of pullsOf(repository)) {
                if (candidate.pull.state === "open" && candidate.pull.head.ref === branchName) {
                  candidate.pull = { ...candidate.pull, head: { ...candidate.pull.head, sha } }
                }
              }
            }

            if (/^(?:contents|git)(?:\/|$)/.test(route)) {
              // Served from the real git repository only.
              if (dir === undefined) return json(404, { message: "Not Found" })
              const contents = /^contents\/(.+)$/.exec(route)
              if (contents !== null && method === "GET") {
                const path = decodeURIComponent(contents[1] ?? "").replace(/^\/+|\/+$/g, "")
                const ref = url.searchParams.get("ref")
                const commit = await gitResolveCommit(dir, ref ?? "HEAD")
                const file = commit === undefined ? undefined : await gitReadBlob(dir, commit, path)
                if (file === undefined) return json(404, { message: "Not Found" })
                const at = ref ?? "main"
                return json(200, {
                  type: "file",
                  encoding: "base64",
                  size: file.content.length,
                  name: path.slice(path.lastIndexOf("/") + 1),
                  path,
                  // GitHub breaks the base64 into lines of 60 characters.
                  content: `${(file.content.toString("base64").match(/.{1,60}/g) ?? []).join("\n")}\n`,
                  sha: file.sha,
                  url: `${api}/repos/${repository}/contents/${path}?ref=${encodeURIComponent(at)}`,
                  git_url: `${gitApi}/blobs/${file.sha}`,
                  html_url: `https://github.com/${repository}/blob/${at}/${path}`,
                  download_url: `https://raw.githubusercontent.com/${repository}/${at}/${path}`,
                  _links: {
                    self: `${api}/repos/${repository}/contents/${path}?ref=${encodeURIComponent(at)}`,
                    git: `${gitApi}/blobs/${file.sha}`,
                    html: `https://github.com/${repository}/blob/${at}/${path}`
                  }
                })
              }
              const oneRef = /^git\/ref\/(.+)$/.exec(route)
              if (oneRef !== null && method === "GET") {
                const ref = `refs/${decodeURIComponent(oneRef[1] ?? "")}`
                const sha = (await gitRefs(dir))[ref]
                if (sha === undefined) return json(404, { message: "Not Found" })
                return json(200, refJson(ref, sha, await gitObjectType(dir, sha)))
              }
              const readCommit = /^git\/commits\/([^/]+)$/.exec(route)
              if (readCommit !== null && method === "GET") {
                const commit = await gitReadCommit(dir, readCommit[1] ?? "")
                if (commit === undefined) return json(404, { message: "Not Found" })
                return json(200, commitJson(commit))
              }
              if (route === "git/trees" && method === "POST") {
                const documentation = "git/trees#create-a-tree"
                const { base_tree: baseTree, tree } = input
                if (baseTree !== undefined && baseTree !== null) {
                  if (typeof baseTree !== "string" || (await gitObjectType(dir, baseTree)) !== "tree") {
                    return invalid(documentation, "base_tree is not a valid tree oid")
                  }
                }
                if (!Array.isArray(tree)) return invalid(documentation, 'Invalid request.\n\n"tree" wasn\'t supplied.')
                const base = typeof baseTree === "string" ? baseTree : undefined
                const changes: Array<GitTreeChange> = []
                for (const entry of tree as ReadonlyArray<unknown>) {
                  const { path, mode, type, content, sha } = Predicate.isObject(entry) ? entry : {}
                  if (
                    typeof path !== "string" ||
                    path.split("/").some((part) => part === "" || part === "." || part === ".." || part === ".git")
                  ) {
                    return invalid(documentation, "tree.path contains a malformed path component")
                  }
                  if (type !== "blob" || (mode !== "100644" && mode !== "100755" && mode !== "120000")) {
                    return invalid(
                      documentation,
                      `Invalid tree info: ${path} must be a blob of mode 100644, 100755 or 120000`
                    )
                  }
                  if (content !== undefined && sha !== undefined) {
                    return invalid(
                      documentation,
                      "Must supply either tree.sha or tree.content. Request can not include both."
                    )
                  }
                  if (typeof content === "string") {
                    changes.push({ path, mode, content })
                  } else if (sha === null) {
                    // Removing a file the base tree does not have fails on GitHub.
                    const removed = base === undefined ? undefined : await gitTreeEntry(dir, base, path)
                    if (removed?.type !== "blob") return invalid(documentation, "GitRPC::BadObjectState")
                    changes.push({ path, mode, sha: null })
                  } else if (isGitSha(sha) && (await gitObjectType(dir, sha)) === "blob") {
                    changes.push({ path, mode, sha })
                  } else {
                    return invalid(documentation, `tree.sha ${String(sha)} is not a valid blob`)
                  }
                }
                const written = await gitWriteTree(dir, base, changes)
                return json(201, {
                  sha: written,
                  url: `${gitApi}/trees/${written}`,
                  tree: (await gitListTree(dir, written)).map((entry) => ({
                    ...entry,
                    url: `${gitApi}/${entry.type}s/${entry.sha}`
                  })),
                  truncated: false
                })
              }
              if (route === "git/commits" && method === "POST") {
                const documentation = "git/commits#create-a-commit"
                const { message, tree, parents, author, committer } = input
                if (typeof message !== "string" || typeof tree !== "string") {
                  return invalid(documentation, 'Invalid request.\n\n"message" and "tree" are required.')
                }
                if ((await gitObjectType(dir, tree)) !== "tree") {
                  return invalid(documentation, "Tree SHA does not exist")
                }
                const parentShas = parents === undefined ? [] : parents
                if (!Array.isArray(parentShas)) {
                  return invalid(documentation, 'Invalid request.\n\n"parents" is not an array.')
                }
                for (const parent of parentShas as ReadonlyArray<unknown>) {
                  if (typeof parent !== "string" || (await gitObjectType(dir, parent)) !== "commit") {
                    return invalid(documentation, "Parent SHA does not exist or is not a commit object")
                  }
                }
                const identity = (given: unknown, fallback: { readonly name: string; readonly email: string }) => {
                  if (given === undefined) return fallback
                  const { name, email, date } = Predicate.isObject(given) ? given : {}
                  if (typeof name !== "string" || typeof email !== "string") return undefined
                  if (date !== undefined && (typeof date !== "string" || Number.isNaN(Date.parse(date)))) {
                    return undefined
                  }
                  return { name, email, ...(typeof date === "string" ? { date } : {}) }
                }
                // The author defaults to the App's bot, the committer to the author.
                const authorIdentity = identity(author, {
                  name: bot.login,
                  email: `${bot.id}+${bot.login}@users.noreply.github.com`
                })
                const committerIdentity = authorIdentity === undefined ? undefined : identity(committer, authorIdentity)
                if (authorIdentity === undefined || committerIdentity === undefined) {
                  return invalid(
                    documentation,
                    "Invalid request.\n\nInvalid author or committer: name and email are required."
                  )
                }
                const sha = await gitCommitTree(dir, {
                  tree,
                  parents: parentShas as ReadonlyArray<string>,
                  message,
                  author: authorIdentity,
                  committer: committerIdentity
                })
                const commit = await gitReadCommit(dir, sha)
                if (commit === undefined) return json(500, { message: "Server Error" })
                return json(201, commitJson(commit))
              }
              if (route === "git/refs" && method === "POST") {
                const documentation = "git/refs#create-a-reference"
                const { ref, sha } = input
                if (typeof ref !== "string" || typeof sha !== "string") {
                  return invalid(documentation, 'Invalid request.\n\n"ref" and "sha" are required.')
                }
                // GitHub takes a full ref name: `refs/` and at least two slashes.
                if (!/^refs\/[^/]+\/./.test(ref) || !(await gitIsValidRefName(dir, ref))) {
                  return invalid(documentation, `${ref} is not a valid ref name.`)
                }
                if ((await gitRefs(dir))[ref] !== undefined) return invalid(documentation, "Reference already exists")
                const type = await gitObjectType(dir, sha)
                if (type === undefined) return invalid(documentation, "Object does not exist")
                // The empty expected value makes git refuse a ref created in between.
                if (!(await gitUpdateRef(dir, ref, sha, ""))) return invalid(documentation, "Reference already exists")
                if (ref.startsWith("refs/heads/")) moveHeads(ref.slice("refs/heads/".length), sha)
                return json(201, refJson(ref, sha, type))
              }
              const oneRefUpdate = /^git\/refs\/(.+)$/.exec(route)
              if (oneRefUpdate !== null && (method === "PATCH" || method === "DELETE")) {
                const ref = `refs/${decodeURIComponent(oneRefUpdate[1] ?? "")}`
                const current = (await gitRefs(dir))[ref]
                if (method === "DELETE") {
                  if (current === undefined || !(await gitDeleteRef(dir, ref))) {
                    return invalid("git/refs#delete-a-reference", "Reference does not exist")
                  }
                  res.writeHead(204)
                  return res.end()
                }
                const documentation = "git/refs#update-a-reference"
                const { sha, force } = input
                if (typeof sha !== "string") return invalid(documentation, 'Invalid request.\n\n"sha" is required.')
                if (current === undefined) return invalid(documentation, "Reference does not exist")
                const type = await gitObjectType(dir, sha)
                if (type === undefined) return invalid(documentation, "Object does not exist")
                if (force !== true && !(await gitIsAncestor(dir, current, sha))) {
                  return invalid(documentation, "Update is not a fast forward")
                }
                // Moved only from where it was read, as GitHub's compare-and-swap does.
                if (!(await gitUpdateRef(dir, ref, sha, current))) {
                  return invalid(documentation, "Update is not a fast forward")
                }
                if (ref.startsWith("refs/heads/")) moveHeads(ref.slice("refs/heads/".length), sha)
                return json(200, refJson(ref, sha, type))
              }
              return json(404, { message: "Not Found" })
            }

            if (route === "pulls" && method === "GET") {
              const state = url.searchParams.get("state") ?? "open"
              const head = url.searchParams.get("head")
              const base = url.searchParams.get("base")
              // `head` is `owner:branch` (a fork's owner never matches here); a bare branch name matches on the name.
              const [headOwner, headRef] = head?.includes(":") ? head.split(/:(.*)/s) : [undefined, head]
              const listed = pullsOf(repository)
                .filter(
                  ({ pull }) =>
                    (state === "all" || pull.state === state) &&
                    (headRef === null ||
                      (pull.head.ref === headRef && (headOwner === undefined || headOwner === owner))) &&
                    (base === null || pull.base.ref === base)
                )
                // GitHub's default order: the newest first.
                .reverse()
              const page = paged(listed)
              return json(
                200,
                page.items.map((listedRecord) => pullJson(listedRecord.pull, listedRecord.id)),
                page.headers
              )
            }
            if (route === "pulls" && method === "POST") {
              const { title, head, base, body: description, draft } = input
              if (typeof title !== "string" || title === "") {
                return invalidPull({ field: "title", code: "missing_field" })
              }
              if (typeof head !== "string" || head === "") return invalidPull({ field: "head", code: "missing_field" })
              if (typeof base !== "string" || base === "") return invalidPull({ field: "base", code: "missing_field" })
              if (description !== undefined && description !== null && typeof description !== "string") {
                return invalidPull({ field: "body", code: "invalid" })
              }
              if (draft !== undefined && typeof draft !== "boolean") {
                return invalidPull({ field: "draft", code: "invalid" })
              }
              // `owner:branch` or the branch alone; a fork's branch is not there.
              const [headOwner, headRef = ""] = head.includes(":") ? head.split(/:(.*)/s) : [owner, head]
              const headSha = headOwner === owner ? await branchSha(repository, headRef) : undefined
              if (headSha === undefined) return invalidPull({ field: "head", code: "invalid" })
              const baseSha = await branchSha(repository, base)
              if (baseSha === undefined) return invalidPull({ field: "base", code: "invalid" })
              const existing = pullsOf(repository).find(
                ({ pull }) => pull.state === "open" && pull.head.ref === headRef && pull.base.ref === base
              )
              if (existing !== undefined) {
                return invalidPull({
                  code: "custom",
                  message: `A pull request already exists for ${owner}:${headRef}.`
                })
              }
              // Only branches the git repository knows can be compared (`setBranch` may name made-up commits).
              if (
                dir !== undefined &&
                (await gitObjectType(dir, baseSha)) === "commit" &&
                (await gitObjectType(dir, headSha)) === "commit" &&
                (await gitCommitsAhead(dir, baseSha, headSha)) === 0
              ) {
                return invalidPull({ code: "custom", message: `No commits between ${base} and ${headRef}` })
              }
              const number = Math.max(0, ...pullsOf(repository).map(({ pull }) => pull.number)) + 1
              const opened: PullRecord = {
                pull: {
                  number,
                  head: { ref: headRef, sha: headSha },
                  base: { ref: base, sha: baseSha },
                  title,
                  body: typeof description === "string" ? description : null,
                  draft: draft === true,
                  state: "open",
                  user: { login: bot.login, type: "Bot" },
                  // Left for the test to fill from the git repository (`setPull` with `pullFiles`).
                  files: []
                },
                id: nextId(),
                createdAt: timestamp(),
                reviews: [],
                threads: [],
                issueComments: []
              }
              pulls.set(`${repository}#${number}`, opened)
              createdPullNumbers.set(repository, [...(createdPullNumbers.get(repository) ?? []), number])
              return json(201, pullJson(opened.pull, opened.id))
            }

            if (record !== undefined && route.startsWith("pulls/")) {
              if (sub === "" && method === "GET") return json(200, pullJson(record.pull))
              if (sub === "" && method === "PATCH") {
                const { body: description, title, state } = input
                if (
                  (description !== undefined && description !== null && typeof description !== "string") ||
                  (title !== undefined && typeof title !== "string") ||
                  (state !== undefined && state !== "open" && state !== "closed")
                ) {
                  return json(422, {
                    message: "Validation Failed",
                    errors: [{ resource: "PullRequest", code: "invalid" }]
                  })
                }
                record.pull = {
                  ...record.pull,
                  ...(description === undefined ? {} : { body: description }),
                  ...(title === undefined ? {} : { title }),
                  ...(state === undefined ? {} : { state })
                }
                return json(200, pullJson(record.pull))
              }
              if (sub === "/files" && method === "GET") {
                // GitHub lists at most 3,000 files of a pull request.
                const page = paged(record.pull.files.slice(0, 3000))
                return json(
                  200,
                  page.items.map((file) => ({
                    sha: createHash("sha1").update(`${file.filename}@${record.pull.head.sha}`).digest("hex"),
                    filename: file.filename,
                    status: file.status,
                    additions: file.additions,
                    deletions: file.deletions,
                    changes: file.additions + file.deletions,
                    blob_url: `https://github.com/${repository}/blob/${record.pull.head.sha}/${file.filename}`,
                    raw_url: `https://github.com/${repository}/raw/${record.pull.head.sha}/${file.filename}`,
                    contents_url: `${api}/repos/${repository}/contents/${file.filename}?ref=${record.pull.head.sha}`,
                    ...(file.patch === undefined ? {} : { patch: file.patch })
                  })),
                  page.headers
                )
              }
              if (sub === "/reviews" && method === "GET") {
                const page = paged(record.reviews)
                return json(200, page.items.map(reviewJson), page.headers)
              }
              const reviewComments = /^\/reviews\/(\d+)\/comments$/.exec(sub)
              if (reviewComments !== null && method === "GET") {
                const review = record.reviews.find((candidate) => candidate.id === Number(reviewComments[1]))
                if (review === undefined) return json(404, { message: "Not Found" })
                const page = paged(review.comments)
                return json(200, page.items.map(commentJson), page.headers)
              }
              if (sub === "/reviews" && method === "POST") {
                const event = input.event
                if (event !== undefined && (typeof event !== "string" || REVIEW_STATES[event] === undefined)) {
                  return unprocessable("pulls/reviews#create-a-review-for-a-pull-request", `Invalid event: ${event}`)
                }
                const commitId = input.commit_id ?? record.pull.head.sha
                if (typeof commitId !== "string" || !/^[0-9a-f]{40}$/.test(commitId)) {
                  return unprocessable(
                    "pulls/reviews#create-a-review-for-a-pull-request",
                    `No commit found for SHA: ${commitId}`
                  )
                }
                const reviewId = nextId()
                const submittedAt = timestamp()
                const drafts = Array.isArray(input.comments) ? (input.comments as ReadonlyArray<unknown>) : []
                const comments: Array<FakeGithubReviewComment> = []
                // Every comment is checked before anything is kept: GitHub posts the whole review or none of it.
                for (const draft of drafts) {
                  const fields = Predicate.isObject(draft) ? draft : {}
                  const { path, body: text, line } = fields
                  const side = fields.side ?? "RIGHT"
                  const startLine = fields.start_line ?? null
                  const startSide = fields.start_side ?? (startLine === null ? null : side)
                  const file = record.pull.files.find((candidate) => candidate.filename === path)
                  if (typeof path !== "string" || typeof text !== "string") {
                    return unprocessable("pulls/reviews#create-a-review-for-a-pull-request", "Invalid comment")
                  }
                  if (file?.patch === undefined) {
                    return unprocessable(
                      "pulls/reviews#create-a-review-for-a-pull-request",
                      "Path could not be resolved"
                    )
                  }
                  if (
                    typeof line !== "number" ||
                    (side !== "LEFT" && side !== "RIGHT") ||
                    (startLine !== null && typeof startLine !== "number") ||
                    (startSide !== null && startSide !== "LEFT" && startSide !== "RIGHT")
                  ) {
                    return unprocessable(
                      "pulls/reviews#create-a-review-for-a-pull-request",
                      "Pull request review thread line must be part of the diff"
                    )
                  }
                  if (startLine !== null && startLine >= line) {
                    return unprocessable(
                      "pulls/reviews#create-a-review-for-a-pull-request",
                      "Pull request review thread start line must precede the end line"
                    )
                  }
                  const lines = diffLines(file.patch)
                  // A range on one side covers every line between; across sides, GitHub checks its two ends.
                  const covered =
                    startLine === null
                      ? [`${side}:${line}`]
                      : startSide === side
                        ? Array.from({ length: line - startLine + 1 }, (_, i) => `${side}:${startLine + i}`)
                        : [`${startSide}:${startLine}`, `${side}:${line}`]
                  const at = lines.get(`${side}:${line}`)
                  if (at === undefined || covered.some((key) => !lines.has(key))) {
                    return unprocessable(
                      "pulls/reviews#create-a-review-for-a-pull-request",
                      "Pull request review thread line must be part of the diff"
                    )
                  }
                  const id = nextId()
                  comments.push({
                    id,
                    node_id: nodeId("PRRC", id),
                    pull_request_review_id: reviewId,
                    in_reply_to_id: null,
                    path,
                    line,
                    start_line: startLine,
                    side,
                    start_side: startSide,
                    position: at.position,
                    diff_hunk: file.patch
                      .split("\n")
                      .slice(at.hunk, at.position + 1)
                      .join("\n"),
                    commit_id: commitId,
                    body: text,
                    user: bot,
                    created_at: submittedAt
                  })
                }
                const review: FakeGithubReview = {
                  id: reviewId,
                  node_id: nodeId("PRR", reviewId),
                  body: typeof input.body === "string" ? input.body : "",
                  commit_id: commitId,
                  event: typeof event === "string" ? event : null,
                  state: typeof event === "string" ? (REVIEW_STATES[event] ?? "PENDING") : "PENDING",
                  user: bot,
                  submitted_at: submittedAt,
                  comments
                }
                record.reviews.push(review)
                for (const comment of comments) {
                  const threadId = nextId()
                  record.threads.push({ id: nodeId("PRRT", threadId), isResolved: false, commentIds: [comment.id] })
                }
                return json(200, reviewJson(review))
              }
              const replies = /^\/comments\/(\d+)\/replies$/.exec(sub)
              if (replies !== null && method === "POST") {
                if (typeof input.body !== "string") {
                  return unprocessable("pulls/comments#create-a-reply-for-a-review-comment", "body is missing")
                }
                const posted = reply(record, Number(replies[1]), bot, input.body)
                if (posted === undefined) return json(404, { message: "Not Found" })
                return json(201, commentJson(posted))
              }
            }
            if (record !== undefined && sub === "/comments" && method === "GET" && route.startsWith("issues/")) {
              const page = paged(record.issueComments)
              return json(200, page.items.map(issueCommentJson), page.headers)
            }
            const compare = /^compare\/([0-9a-f]+)\.\.\.([0-9a-f]+)$/.exec(route)
            if (compare !== null && method === "GET") {
              const listed = compares.get(`${repository}#${compare[1]}...${compare[2]}`)
              if (listed === undefined) return json(404, { message: "Not Found" })
              const [base = "", head = ""] = [compare[1], compare[2]]
              const htmlUrl = `https://github.com/${repository}/compare/${base}...${head}`
              const baseCommit = await commitDetails(api, repository, base)
              // GitHub lists a comparison's files (at most 300) on its first page only.
              return json(200, {
                url: `${api}/repos/${repository}/compare/${base}...${head}`,
                html_url: htmlUrl,
                permalink_url: `https://github.com/${repository}/compare/${owner}:${base}...${owner}:${head}`,
                diff_url: `${htmlUrl}.diff`,
                patch_url: `${htmlUrl}.patch`,
                base_commit: baseCommit,
                merge_base_commit: baseCommit,
                status: "ahead",
                ahead_by: 1,
                behind_by: 0,
                total_commits: 1,
                commits: [await commitDetails(api, repository, head)],
                files: listed.slice(0, 300).map((filename) => ({
                  sha: createHash("sha1").update(`${filename}@${head}`).digest("hex"),
                  filename,
                  status: "modified",
                  additions: 1,
                  deletions: 0,
                  changes: 1,
                  blob_url: `https://github.com/${repository}/blob/${head}/${filename}`,
                  raw_url: `https://github.com/${repository}/raw/${head}/${filename}`,
                  contents_url: `${api}/repos/${repository}/contents/${filename}?ref=${head}`
                }))
              })
            }
            if (record !== undefined && sub === "/comments" && method === "POST" && route.startsWith("issues/")) {
              if (typeof input.body !== "string" || input.body === "") {
                return json(422, {
                  message: "Validation Failed",
                  errors: [{ resource: "IssueComment", code: "missing_field", field: "body" }]
                })
              }
              const id = nextId()
              const comment: FakeGithubIssueComment = {
                id,
                node_id: nodeId("IC", id),
                body: input.body,
                user: bot,
                created_at: timestamp()
              }
              record.issueComments.push(comment)
              return json(201, issueCommentJson(comment))
            }
            const runs = checkRuns.get(repository) ?? []
            const listRuns = /^commits\/([^/]+)\/check-runs$/.exec(route)
            if (listRuns !== null && method === "GET") {
              const ref = decodeURIComponent(listRuns[1] ?? "")
              const sha = branches.get(`${repository}#${ref}`) ?? ref
              const name = url.searchParams.get("check_name")
              const status = url.searchParams.get("status")
              const matching = runs.filter(
                (run) =>
                  run.head_sha === sha &&
                  (name === null || run.name === name) &&
                  (status === null || run.status === status)
              )
              // `filter=latest` (GitHub's default) keeps the most recent check run of each name.
              const listed =
                url.searchParams.get("filter") === "all"
                  ? matching
                  : matching.filter((run) => !matching.some((other) => other.name === run.name && other.id > run.id))
              const page = paged([...listed].reverse())
              return json(200, { total_count: listed.length, check_runs: page.items.map(checkRunJson) }, page.headers)
            }
            if (route === "check-runs" && method === "POST") {
              const { name, head_sha: headSha, external_id: externalId, conclusion, output } = input
              const status = input.status ?? (conclusion === undefined ? "queued" : "completed")
              const out = Predicate.isObject(output) ? output : {}
              if (typeof name !== "string" || name === "" || typeof headSha !== "string") {
                return json(422, { message: 'Invalid request.\n\n"name" and "head_sha" are required.' })
              }
              if (status === "completed" && typeof conclusion !== "string") {
                return json(422, { message: "Invalid request.\n\nNo conclusion provided for a completed check run." })
              }
              if (output !== undefined && (typeof out.title !== "string" || typeof out.summary !== "string")) {
                return json(422, { message: 'Invalid request.\n\n"title" and "summary" are required in output.' })
              }
              const id = nextId()
              const run: FakeGithubCheckRun = {
                id,
                node_id: nodeId("CR", id),
                name,
                head_sha: headSha,
                external_id: typeof externalId === "string" ? externalId : null,
                status: String(status),
                conclusion: typeof conclusion === "string" ? conclusion : null,
                details_url: typeof input.details_url === "string" ? input.details_url : null,
                started_at: timestamp(),
                completed_at: status === "completed" ? timestamp() : null,
                output: {
                  title: typeof out.title === "string" ? out.title : null,
                  summary: typeof out.summary === "string" ? out.summary : null,
                  text: typeof out.text === "string" ? out.text : null,
                  annotations_count: 0
                },
                app: { id: installation.appId, slug: appSlugs.get(installation.appId) ?? "bosun" }
              }
              checkRuns.set(repository, [...runs, run])
              checkRunStates.set(id, [run.conclusion ?? run.status])
              return json(201, checkRunJson(run))
            }
            const updateRun = /^check-runs\/(\d+)$/.exec(route)
            if (updateRun !== null && method === "PATCH") {
              const id = Number(updateRun[1])
              const current = runs.find((run) => run.id === id)
              if (current === undefined) return json(404, { message: "Not Found" })
              const { conclusion, output } = input
              const status = input.status ?? (conclusion === undefined ? current.status : "completed")
              const out = Predicate.isObject(output) ? output : {}
              if (status === "completed" && typeof conclusion !== "string" && current.conclusion === null) {
                return json(422, { message: "Invalid request.\n\nNo conclusion provided for a completed check run." })
              }
              const updated: FakeGithubCheckRun = {
                ...current,
                ...(typeof input.name === "string" ? { name: input.name } : {}),
                ...(typeof input.external_id === "string" ? { external_id: input.external_id } : {}),
                status: String(status),
                conclusion: typeof conclusion === "string" ? conclusion : current.conclusion,
                completed_at: status === "completed" ? (current.completed_at ?? timestamp()) : null,
                output:
                  output === undefined
                    ? current.output
                    : {
                        title: typeof out.title === "string" ? out.title : null,
                        summary: typeof out.summary === "string" ? out.summary : null,
                        text: typeof out.text === "string" ? out.text : null,
                        annotations_count: 0
                      }
              }
              checkRuns.set(
                repository,
                runs.map((run) => (run.id === id ? updated : run))
              )
              checkRunStates.set(id, [...(checkRunStates.get(id) ?? []), updated.conclusion ?? updated.status])
              return json(200, checkRunJson(updated))
            }
            return json(404, { message: "Not Found" })
          }

          if (method === "POST" && url.pathname === "/api/graphql") {
            if (installation === undefined) return json(401, { message: "Bad credentials" })
            const { query, variables: given } = parseObject(body)
            const document = typeof query === "string" ? query : ""
            const variables = Predicate.isObject(given) ? given : {}
            const notFound = (path: ReadonlyArray<string>, message: string) => ({
              type: "NOT_FOUND",
              path,
              locations: [{ line: 2, column: 3 }],
              message
            })
            const resolving = /\bresolveReviewThread\b/.test(document)
            if (resolving || /\bunresolveReviewThread\b/.test(document)) {
              const field = resolving ? "resolveReviewThread" : "unresolveReviewThread"
              const threadId = graphqlArgument(document, field, "threadId", variables)
              const thread = [...pulls.entries()]
                .filter(([key]) => installation.repositories.includes(key.slice(0, key.lastIndexOf("#"))))
                .flatMap(([, candidate]) => candidate.threads)
                .find((candidate) => candidate.id === threadId)
              if (thread === undefined) {
                return json(200, {
                  data: null,
                  errors: [notFound([field], `Could not resolve to a node with the global id of '${String(threadId)}'`)]
                })
              }
              thread.isResolved = resolving
              return json(200, { data: { [field]: { thread: { id: thread.id, isResolved: thread.isResolved } } } })
            }
            if (/\breviewThreads\b/.test(document)) {
              const owner = graphqlArgument(document, "repository", "owner", variables)
              const name = graphqlArgument(document, "repository", "name", variables)
              const number = graphqlArgument(document, "pullRequest", "number", variables)
              const first = graphqlArgument(document, "reviewThreads", "first", variables)
              const after = graphqlArgument(document, "reviewThreads", "after", variables)
              const commentsFirst = graphqlArgument(document, "comments", "first", variables)
              const repository = `${String(owner)}/${String(name)}`
              if (!installation.repositories.includes(repository)) {
                return json(200, {
                  data: { repository: null },
                  errors: [notFound(["repository"], `Could not resolve to a Repository with the name '${repository}'.`)]
                })
              }
              if (typeof first !== "number" || first < 0 || first > 100) {
                return json(200, {
                  data: null,
                  errors: [
                    typeof first === "number"
                      ? {
                          type: "EXCESSIVE_PAGINATION",
                          path: ["repository", "pullRequest", "reviewThreads"],
                          message: `Requesting ${first} records on the \`reviewThreads\` connection exceeds the \`first\` limit of 100 records.`
                        }
                      : {
                          type: "MISSING_PAGINATION_BOUNDARIES",
                          path: ["repository", "pullRequest", "reviewThreads"],
                          message:
                            "You must provide a `first` or `last` value to properly paginate the `reviewThreads` connection."
                        }
                  ]
                })
              }
              const record = pullOf(repository, Number(number))
              if (record === undefined) {
                return json(200, {
                  data: { repository: { pullRequest: null } },
                  errors: [
                    notFound(
                      ["repository", "pullRequest"],
                      `Could not resolve to a PullRequest with the number of ${String(number)}.`
                    )
                  ]
                })
              }
              const start = after === undefined || after === null ? 0 : indexOfCursor(after) + 1
              const nodes = record.threads.slice(start, start + first)
              // GitHub answers the deprecated 32-bit `databaseId` of a larger id with an error.
              const overflow = /\bdatabaseId\b/.test(document)
                ? nodes.flatMap((thread) => thread.commentIds).find((id) => id > 2 ** 31 - 1)
                : undefined
              if (overflow !== undefined) {
                return json(200, {
                  data: null,
                  errors: [
                    {
                      message: `Int cannot represent non 32-bit signed integer value: ${overflow}`,
                      path: [
                        "repository",
                        "pullRequest",
                        "reviewThreads",
                        "nodes",
                        0,
                        "comments",
                        "nodes",
                        0,
                        "databaseId"
                      ]
                    }
                  ]
                })
              }
              const end = start + nodes.length - 1
              return json(200, {
                data: {
                  repository: {
                    pullRequest: {
                      reviewThreads: {
                        pageInfo: {
                          hasNextPage: start + first < record.threads.length,
                          endCursor: nodes.length === 0 ? null : cursorOf(end)
                        },
                        nodes: nodes.map((thread) => ({
                          id: thread.id,
                          isResolved: thread.isResolved,
                          comments: {
                            nodes: thread.commentIds
                              .slice(0, typeof commentsFirst === "number" ? commentsFirst : undefined)
                              .map((id) =>
                                // GitHub's BigInt scalar is a string; the deprecated Int field is
                                // answered only as far as 32 bits reach (see the check above).
                                /\bfullDatabaseId\b/.test(document)
                                  ? { fullDatabaseId: String(id) }
                                  : { databaseId: id }
                              )
                          }
                        }))
                      }
                    }
                  }
                }
              })
            }
            return json(200, {
              errors: [{ message: "The fake GitHub answers only reviewThreads and (un)resolveReviewThread" }]
            })
          }

          // Public profiles, no credentials needed: the accounts of installations and of users who signed in.
          const profile = /^\/api\/v3\/users\/([^/]+)$/.exec(url.pathname)
          if (method === "GET" && profile !== null) {
            const wanted = decodeURIComponent(profile[1] ?? "").toLowerCase()
            const known = [
              ...[...installations.values()].map((installation) => installation.account),
              ...[...codes.values()].map(({ user }) => ({ id: user.id, login: user.login, type: "User" })),
              ...[...tokens.values()].map((user) => ({ id: user.id, login: user.login, type: "User" }))
            ].find((account) => account.login.toLowerCase() === wanted)
            if (known === undefined) return json(404, { message: "Not Found" })
            const person = [...[...codes.values()].map(({ user }) => user), ...tokens.values()].find(
              (candidate) => candidate.id === known.id
            )
            return json(200, {
              ...publicUser(api, known, person?.name ?? null),
              ...(person === undefined ? {} : { avatar_url: person.avatar_url })
            })
          }
          const user = tokens.get((req.headers.authorization ?? "").replace(/^(token|bearer) /i, ""))
          if (user === undefined) return json(401, { message: "Bad credentials" })
          if (method === "GET" && url.pathname === "/api/v3/user") {
            // The signed-in user's own profile: GitHub's `private-user`.
            return json(200, {
              ...publicUser(api, { id: user.id, login: user.login, type: "User" }, user.name),
              avatar_url: user.avatar_url,
              user_view_type: "private",
              private_gists: 0,
              total_private_repos: 0,
              owned_private_repos: 0,
              disk_usage: 0,
              collaborators: 0,
              two_factor_authentication: true
            })
          }
          if (method === "GET" && url.pathname === "/api/v3/user/installations") {
            return json(200, {
              total_count: user.installations.length,
              installations: user.installations.map((reachable) => {
                const appId = installations.get(reachable.id)?.appId ?? [...appSlugs.keys()][0] ?? 0
                return installationJson(api, { ...reachable, appId }, appSlugs.get(appId) ?? "bosun")
              })
            })
          }
          const membership = /^\/api\/v3\/user\/memberships\/orgs\/([^/]+)$/.exec(url.pathname)
          if (method === "GET" && membership !== null) {
            const org = decodeURIComponent(membership[1] ?? "")
            const role = user.orgRoles[org]
            if (role === undefined) return json(404, { message: "Not Found" })
            const organization = [...installations.values()]
              .map((installation) => installation.account)
              .find((candidate) => candidate.login.toLowerCase() === org.toLowerCase())
            return json(200, {
              url: `${api}/orgs/${encodeURIComponent(org)}/memberships/${encodeURIComponent(user.login)}`,
              state: "active",
              role,
              organization_url: `${api}/orgs/${encodeURIComponent(org)}`,
              organization: organizationSimple(api, { login: org, id: organization?.id ?? accountId(org) }),
              user: simpleUser(api, { id: user.id, login: user.login, type: "User" })
            })
          }
          return json(404, { message: "Not Found" })
        }
        // A call that breaks the fake (a git command failing) answers 500 instead of leaving the client waiting.
        const server = createServer((req, res) => {
          handle(req, res).catch((error: unknown) => {
            if (!res.headersSent) res.writeHead(500, { "content-type": "application/json; charset=utf-8" })
            res.end(JSON.stringify({ message: `FakeGithub failed: ${String(error)}` }))
          })
        })
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
        const { port } = server.address() as AddressInfo
        const url = `http://127.0.0.1:${port}`
        return {
          server,
          service: FakeGithub.of({
            url,
            apiUrl: `${url}/api/v3`,
            requests,
            addApp: (app) => {
              apps.set(app.clientId, app.clientSecret)
              if (app.appId !== undefined && app.publicKey !== undefined) appKeys.set(app.appId, app.publicKey)
              if (app.appId !== undefined) appSlugs.set(app.appId, app.slug ?? "bosun")
            },
            addInstallation: (installation) => installations.set(installation.id, installation),
            setBranch: (repository, branch, sha) => branches.set(`${repository}#${branch}`, sha),
            setPull: (repository, pull) => {
              const existing = pullOf(repository, pull.number)
              if (existing !== undefined) {
                existing.pull = { ...existing.pull, ...pull }
                return
              }
              const { head, base } = pull
              if (head === undefined || base === undefined) {
                throw new Error(`setPull: the new pull request ${repository}#${pull.number} needs head and base`)
              }
              pulls.set(`${repository}#${pull.number}`, {
                pull: {
                  title: `Pull request ${pull.number}`,
                  body: null,
                  draft: false,
                  state: "open",
                  user: { login: "octocat", type: "User" },
                  files: [],
                  ...pull,
                  head,
                  base
                },
                id: nextId(),
                createdAt: timestamp(),
                reviews: [],
                threads: [],
                issueComments: []
              })
            },
            pullBody: (repository, number) => pullOf(repository, number)?.pull.body,
            reviews: (repository, number) => structuredClone(pullOf(repository, number)?.reviews ?? []),
            threads: (repository, number) => structuredClone(pullOf(repository, number)?.threads ?? []),
            issueComments: (repository, number) => structuredClone(pullOf(repository, number)?.issueComments ?? []),
            checkRuns: (repository) => structuredClone(checkRuns.get(repository) ?? []),
            checkRunStates: (id) => [...(checkRunStates.get(id) ?? [])],
            addReply: (repository, number, commentId, { login, body }) => {
              const record = pullOf(repository, number)
              const posted = record === undefined ? undefined : reply(record, commentId, account(login, "User"), body)
              if (posted === undefined) {
                throw new Error(`addReply: ${repository}#${number} has no review comment ${commentId}`)
              }
              return posted.id
            },
            issuedInstallationTokens: () => installationTokens.size,
            issueCode: (clientId, user) => {
              const code = randomBytes(10).toString("hex")
              codes.set(code, { clientId, user })
              return code
            },
            addGitRepository: (repository, bareDir) => gitRepositories.set(repository, bareDir),
            createdPulls: (repository) =>
              structuredClone(
                (createdPullNumbers.get(repository) ?? []).flatMap((number) => {
                  const record = pullOf(repository, number)
                  return record === undefined ? [] : [record.pull]
                })
              ),
            fileAt: (repository, ref, path) =>
              Effect.promise(async () => {
                const dir = gitRepositoryOf(repository)
                const commit = await gitResolveCommit(dir, ref)
                const file = commit === undefined ? undefined : await gitReadBlob(dir, commit, path)
                return file?.content.toString("utf8")
              }),
            refs: (repository) => Effect.promise(async () => gitRefs(gitRepositoryOf(repository))),
            setCompare: (repository, base, head, filenames) =>
              compares.set(`${repository}#${base}...${head}`, filenames),
            failWith: (status) => {
              failure = status
            },
            delayNext: ({ method, path, milliseconds, times }) => {
              delays.push({ method: method.toUpperCase(), path, milliseconds, left: times ?? 1 })
            },
            failNext: ({ method, path, status, times, headers, message, body }) => {
              failures.push({
                method: method.toUpperCase(),
                path,
                status,
                headers: headers ?? {},
                message,
                body,
                left: times ?? 1
              })
            },
            violations: () => [...violations]
          })
        }
      }),
      ({ server, service }) =>
        Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve()))).pipe(
          Effect.andThen(() => {
            const broken = service.violations()
            return broken.length === 0
              ? Effect.void
              : Effect.die(
                  new Error(
                    `FakeGithub: ${broken.length} request(s) broke GitHub's published description:\n${broken.slice(0, 20).join("\n")}`
                  )
                )
          })
        )
    ).pipe(Effect.map(({ service }) => service))
  )
}
