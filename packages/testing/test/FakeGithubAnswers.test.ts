/**
 * The fake GitHub's answers for the REST operations Bosun's production code calls conform to
 * GitHub's published description: each is called with plain `fetch` and the credentials GitHub
 * wants (the App's JWT, an installation token, a user's token, none), and its status and body are
 * checked against `@octokit/openapi`; a last check finds every operation the server calls covered.
 */
import { generateKeyPairSync } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { appJwt } from "../src/AppJwt.ts"
import { FakeGithub, type FakeGithubPullFile, type FakeGithubUser } from "../src/FakeGithub.ts"
import { restOperation, restResponseViolations } from "../src/GithubDescription.ts"
import { makeGitRepository } from "../src/GitRepository.ts"

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
const APP_ID = 7272
const SLUG = "bosun-answers"
const CLIENT_ID = "Iv1.answers"
const CLIENT_SECRET = "answers-client-secret"
const INSTALLATION_ID = 720
const OWNER = "acme"
const ACCOUNT = { id: 9400, login: OWNER, type: "Organization" } as const
/** One repository per test, so that no test sees another's pull requests or check runs. */
const NAMES = ["reads", "reviews", "checks", "changes"] as const
const HEAD = "a".repeat(40)
const BASE = "b".repeat(40)

const USER: FakeGithubUser = {
  id: 58_001,
  login: "octo-dev",
  name: "Octo Dev",
  avatar_url: "https://avatars.githubusercontent.com/u/58001?v=4",
  installations: [{ id: INSTALLATION_ID, account: ACCOUNT }],
  orgRoles: { [OWNER]: "admin" }
}

const Fixture = Layer.effectDiscard(
  Effect.map(FakeGithub, (fake) => {
    fake.addApp({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      appId: APP_ID,
      publicKey: publicKey.export({ type: "spki", format: "pem" }).toString(),
      slug: SLUG
    })
    fake.addInstallation({
      id: INSTALLATION_ID,
      appId: APP_ID,
      account: ACCOUNT,
      repositories: NAMES.map((name) => `${OWNER}/${name}`)
    })
  })
).pipe(Layer.provideMerge(FakeGithub.layer))

/** Each REST call made so far, its path without the `/api/v3` prefix. */
const called: Array<{ readonly method: string; readonly path: string }> = []

interface Call {
  /** The whole `authorization` header (`bearer <jwt>`, `token <token>`); none when absent. */
  readonly authorization?: string
  readonly query?: Readonly<Record<string, string>>
  readonly body?: unknown
}

interface Answer {
  readonly status: number
  readonly body: unknown
  /** The `link` header, null without one. */
  readonly link: string | null
}

/**
 * Calls `method path` (under the fake's `/api/v3`) and checks that the fake answers `status` with
 * a body GitHub's description allows for that operation and status.
 */
const conforming = (method: string, path: string, status: number, call: Call = {}) =>
  Effect.gen(function* () {
    const fake = yield* FakeGithub
    const url = new URL(`${fake.apiUrl}${path}`)
    for (const [name, value] of Object.entries(call.query ?? {})) url.searchParams.set(name, value)
    const { answer, text } = yield* Effect.promise(async () => {
      const response = await fetch(url, {
        method,
        headers: {
          accept: "application/vnd.github+json",
          ...(call.authorization === undefined ? {} : { authorization: call.authorization }),
          ...(call.body === undefined ? {} : { "content-type": "application/json" })
        },
        ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) })
      })
      const raw = await response.text()
      const body: unknown = raw === "" ? undefined : JSON.parse(raw)
      return { answer: { status: response.status, body, link: response.headers.get("link") }, text: raw }
    })
    assert.isDefined(
      restOperation(method, url.pathname),
      `${method} ${url.pathname} is no operation of GitHub's REST API`
    )
    called.push({ method, path: url.pathname.slice(new URL(fake.apiUrl).pathname.length) })
    assert.strictEqual(answer.status, status, `${method} ${url.pathname} answered ${answer.status}: ${text}`)
    assert.deepStrictEqual(
      restResponseViolations({ method, pathname: url.pathname, status: answer.status, body: answer.body }),
      [],
      `${method} ${url.pathname}`
    )
    return answer satisfies Answer
  })

/** The value at `path` inside a JSON value (undefined where there is none). */
const at = (value: unknown, ...path: ReadonlyArray<string | number>): unknown =>
  path.reduce<unknown>(
    (current, key) => (typeof current === "object" && current !== null ? Reflect.get(current, key) : undefined),
    value
  )

const text = (value: unknown): string => {
  assert.isString(value)
  return typeof value === "string" ? value : ""
}

const integer = (value: unknown): number => {
  assert.isTrue(Number.isSafeInteger(value), `${String(value)} is not an integer`)
  return typeof value === "number" ? value : 0
}

const jwt = () => `bearer ${appJwt(privateKey, APP_ID)}`

/** An installation token, minted the way Bosun mints it (the App's JWT); checks the answer too. */
const installationToken = Effect.suspend(() =>
  conforming("POST", `/app/installations/${INSTALLATION_ID}/access_tokens`, 201, { authorization: jwt() })
).pipe(Effect.map((answer) => `token ${text(at(answer.body, "token"))}`))

/** A fresh directory, removed with the test's scope. */
const tempDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "bosun-answers-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

/**
 * `acme/<name>` backed by a real git repository: `main` with a README, a source file and a doc;
 * `feature` from it modifying, adding, removing and adding a binary file.
 */
const servedRepository = Effect.fnUntraced(function* (name: (typeof NAMES)[number]) {
  const fake = yield* FakeGithub
  const root = yield* tempDir
  const repository = `${OWNER}/${name}`
  const repo = yield* Effect.promise(() => makeGitRepository(root, repository))
  const base = yield* Effect.promise(() =>
    repo.commit(
      "main",
      { "README.md": "# api\n", "src/app.ts": "export const a = 1\n", "docs/old.md": "obsolete\n" },
      "Initial commit"
    )
  )
  const head = yield* Effect.promise(() =>
    repo.commit(
      "feature",
      {
        "README.md": "# api\n\nNow with b.\n",
        "src/app.ts": "export const a = 2\n",
        "src/b.ts": "export const b = 1\n",
        "docs/old.md": null,
        "assets/logo.png": "\u0000PNG\u0001\u0002"
      },
      "Add b",
      { from: "main" }
    )
  )
  fake.addGitRepository(repository, repo.dir)
  return { fake, repo, base, head, repository, path: `/repos/${repository}` }
})

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
  { filename: "assets/logo.png", status: "added", additions: 0, deletions: 0 }
]

/** The `METHOD /template` of each REST call in the server's source (`request(...)`, `paginate(...)`). */
const productionOperations = () => {
  const root = fileURLToPath(new URL("../../server/src", import.meta.url))
  const found = new Set<string>()
  for (const file of readdirSync(root, { recursive: true, encoding: "utf8" })) {
    if (!file.endsWith(".ts")) continue
    const source = readFileSync(join(root, file), "utf8")
    for (const match of source.matchAll(/\b(?:request|paginate)\(\s*"((?:GET|POST|PATCH|PUT|DELETE) \/[^"]*)"/g)) {
      if (match[1] !== undefined) found.add(match[1])
    }
  }
  return [...found].sort()
}

layer(Fixture, { excludeTestServices: true })("FakeGithub's answers against GitHub's description", (it) => {
  it.effect("the App's calls with its JWT: the App, a repository's installation, an installation token", () =>
    Effect.gen(function* () {
      const app = yield* conforming("GET", "/app", 200, { authorization: jwt() })
      assert.strictEqual(at(app.body, "id"), APP_ID)
      assert.strictEqual(at(app.body, "slug"), SLUG)

      const installation = yield* conforming("GET", `/repos/${OWNER}/reads/installation`, 200, {
        authorization: jwt()
      })
      assert.strictEqual(at(installation.body, "id"), INSTALLATION_ID)
      assert.strictEqual(at(installation.body, "account", "login"), OWNER)

      const token = yield* installationToken
      assert.match(token, /^token ghs_/)
    })
  )

  it.effect("a signed-in user's calls with their token, and public profiles without credentials", () =>
    Effect.gen(function* () {
      const fake = yield* FakeGithub
      const code = fake.issueCode(CLIENT_ID, USER)
      const exchanged = yield* Effect.promise(() =>
        fetch(`${fake.url}/login/oauth/access_token`, {
          method: "POST",
          headers: { accept: "application/json", "content-type": "application/json" },
          body: JSON.stringify({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, code })
        }).then((response): Promise<unknown> => response.json())
      )
      const authorization = `token ${text(at(exchanged, "access_token"))}`

      const user = yield* conforming("GET", "/user", 200, { authorization })
      assert.strictEqual(at(user.body, "id"), USER.id)
      assert.strictEqual(at(user.body, "login"), USER.login)

      const installations = yield* conforming("GET", "/user/installations", 200, {
        authorization,
        query: { per_page: "100" }
      })
      assert.strictEqual(at(installations.body, "total_count"), 1)
      assert.strictEqual(at(installations.body, "installations", 0, "id"), INSTALLATION_ID)
      assert.strictEqual(at(installations.body, "installations", 0, "account", "login"), OWNER)

      const membership = yield* conforming("GET", `/user/memberships/orgs/${OWNER}`, 200, { authorization })
      assert.strictEqual(at(membership.body, "state"), "active")
      assert.strictEqual(at(membership.body, "role"), "admin")

      const person = yield* conforming("GET", `/users/${USER.login}`, 200)
      assert.strictEqual(at(person.body, "id"), USER.id)
      const organization = yield* conforming("GET", `/users/${OWNER}`, 200)
      assert.strictEqual(at(organization.body, "type"), "Organization")
    })
  )

  it.effect("a pull request, its files page by page with a link header, the comparison, its description", () =>
    Effect.gen(function* () {
      const { fake, repo, base, head, repository, path } = yield* servedRepository("reads")
      const files = yield* Effect.promise(() => repo.pullFiles(base, head))
      assert.strictEqual(files.length, 5)
      fake.setPull(repository, {
        number: 1,
        head: { sha: head, ref: "feature" },
        base: { sha: base, ref: "main" },
        title: "Add b",
        body: "Adds b.",
        user: { login: USER.login, type: "User" },
        files
      })
      const authorization = yield* installationToken

      const pull = yield* conforming("GET", `${path}/pulls/1`, 200, { authorization })
      assert.strictEqual(at(pull.body, "head", "sha"), head)
      assert.strictEqual(at(pull.body, "changed_files"), 5)

      // Three pages of two, each pointing on with GitHub's link header.
      const listed: Array<unknown> = []
      let next: string | undefined = `${path}/pulls/1/files?per_page=2`
      let pages = 0
      while (next !== undefined) {
        const page: Answer = yield* conforming("GET", next, 200, { authorization })
        pages += 1
        assert.isTrue(Array.isArray(page.body))
        listed.push(...(Array.isArray(page.body) ? page.body : []))
        const link = /<([^>]+)>; rel="next"/.exec(page.link ?? "")?.[1]
        if (link !== undefined) assert.isTrue(link.startsWith(`${fake.apiUrl}/`), link)
        next = link?.slice(fake.apiUrl.length)
      }
      assert.strictEqual(pages, 3)
      assert.deepStrictEqual(
        listed.map((file) => at(file, "filename")),
        files.map((file) => file.filename)
      )
      assert.isUndefined(
        at(
          listed.find((file) => at(file, "filename") === "assets/logo.png"),
          "patch"
        )
      )

      fake.setCompare(
        repository,
        base,
        head,
        files.map((file) => file.filename)
      )
      const compare = yield* conforming("GET", `${path}/compare/${base}...${head}`, 200, { authorization })
      assert.strictEqual(at(compare.body, "files", 0, "filename"), files[0]?.filename)

      const patched = yield* conforming("PATCH", `${path}/pulls/1`, 200, {
        authorization,
        body: { body: "Adds b, reviewed by Bosun." }
      })
      assert.strictEqual(at(patched.body, "body"), "Adds b, reviewed by Bosun.")
    })
  )

  it.effect("a review with inline comments, its comments, a reply, conversation comments", () =>
    Effect.gen(function* () {
      const fake = yield* FakeGithub
      const repository = `${OWNER}/reviews`
      const path = `/repos/${repository}`
      fake.setPull(repository, {
        number: 1,
        head: { sha: HEAD, ref: "feature" },
        base: { sha: BASE, ref: "main" },
        files: REVIEW_FILES
      })
      const authorization = yield* installationToken

      const review = yield* conforming("POST", `${path}/pulls/1/reviews`, 200, {
        authorization,
        body: {
          commit_id: HEAD,
          body: "Bosun found two problems.",
          event: "COMMENT",
          comments: [
            { path: "src/app.ts", body: "This can throw.", line: 13, side: "RIGHT" },
            {
              path: "src/app.ts",
              body: "These go together.",
              line: 12,
              side: "LEFT",
              start_line: 10,
              start_side: "LEFT"
            }
          ]
        }
      })
      const reviewId = integer(at(review.body, "id"))
      assert.isAbove(reviewId, 2 ** 32)
      assert.strictEqual(at(review.body, "state"), "COMMENTED")

      const comments = yield* conforming("GET", `${path}/pulls/1/reviews/${reviewId}/comments`, 200, {
        authorization,
        query: { per_page: "100" }
      })
      assert.isTrue(Array.isArray(comments.body))
      const first = integer(at(comments.body, 0, "id"))
      assert.strictEqual(at(comments.body, 1, "start_line"), 10)

      const replied = yield* conforming("POST", `${path}/pulls/1/comments/${first}/replies`, 201, {
        authorization,
        body: { body: "Fixed in the next commit?" }
      })
      assert.strictEqual(at(replied.body, "in_reply_to_id"), first)
      // A person answers too: their reply is a review of their own.
      fake.addReply(repository, 1, first, { login: USER.login, body: "Yes." })

      const reviews = yield* conforming("GET", `${path}/pulls/1/reviews`, 200, {
        authorization,
        query: { per_page: "100" }
      })
      assert.isTrue(Array.isArray(reviews.body))
      assert.deepStrictEqual(
        (Array.isArray(reviews.body) ? reviews.body : []).map((each) => at(each, "user", "login")),
        [`${SLUG}[bot]`, `${SLUG}[bot]`, USER.login]
      )

      const commented = yield* conforming("POST", `${path}/issues/1/comments`, 201, {
        authorization,
        body: { body: "Bosun reviewed this pull request." }
      })
      assert.strictEqual(at(commented.body, "body"), "Bosun reviewed this pull request.")
      const conversation = yield* conforming("GET", `${path}/issues/1/comments`, 200, {
        authorization,
        query: { per_page: "100" }
      })
      assert.strictEqual(at(conversation.body, 0, "id"), at(commented.body, "id"))
    })
  )

  it.effect("a check run created in progress, listed, completed with success, listed again", () =>
    Effect.gen(function* () {
      const path = `/repos/${OWNER}/checks`
      const authorization = yield* installationToken
      const output = { title: "Bosun is reviewing", summary: "Reading the changes." }

      const created = yield* conforming("POST", `${path}/check-runs`, 201, {
        authorization,
        body: { name: "Bosun", head_sha: HEAD, external_id: "run-1", status: "in_progress", output }
      })
      const id = integer(at(created.body, "id"))
      assert.isAbove(id, 2 ** 32)
      assert.strictEqual(at(created.body, "status"), "in_progress")
      assert.isNull(at(created.body, "conclusion"))
      assert.isNull(at(created.body, "completed_at"))

      const list = { check_name: "Bosun", filter: "all", per_page: "100" }
      const running = yield* conforming("GET", `${path}/commits/${HEAD}/check-runs`, 200, {
        authorization,
        query: list
      })
      assert.strictEqual(at(running.body, "total_count"), 1)
      assert.strictEqual(at(running.body, "check_runs", 0, "external_id"), "run-1")

      const completed = yield* conforming("PATCH", `${path}/check-runs/${id}`, 200, {
        authorization,
        body: {
          status: "completed",
          conclusion: "success",
          output: { title: "Bosun approves", summary: "Nothing to report." }
        }
      })
      assert.strictEqual(at(completed.body, "conclusion"), "success")
      assert.isString(at(completed.body, "completed_at"))

      const done = yield* conforming("GET", `${path}/commits/${HEAD}/check-runs`, 200, { authorization, query: list })
      assert.strictEqual(at(done.body, "check_runs", 0, "status"), "completed")
      assert.strictEqual(at(done.body, "check_runs", 0, "conclusion"), "success")
    })
  )

  it.effect("a change opened as a pull request: branch, contents, Git Data, the pull request and finding it", () =>
    Effect.gen(function* () {
      const { base, path } = yield* servedRepository("changes")
      const authorization = yield* installationToken
      const branchName = "bosun/change"

      const main = yield* conforming("GET", `${path}/branches/main`, 200, { authorization })
      assert.strictEqual(at(main.body, "commit", "sha"), base)

      const readme = yield* conforming("GET", `${path}/contents/README.md`, 200, {
        authorization,
        query: { ref: "main" }
      })
      assert.strictEqual(Buffer.from(text(at(readme.body, "content")), "base64").toString("utf8"), "# api\n")

      const ref = yield* conforming("GET", `${path}/git/ref/heads/main`, 200, { authorization })
      assert.strictEqual(at(ref.body, "object", "sha"), base)

      const baseCommit = yield* conforming("GET", `${path}/git/commits/${base}`, 200, { authorization })
      const baseTree = text(at(baseCommit.body, "tree", "sha"))

      const tree = yield* conforming("POST", `${path}/git/trees`, 201, {
        authorization,
        body: {
          base_tree: baseTree,
          tree: [
            { path: "src/new.ts", mode: "100644", type: "blob", content: "export const n = 1\n" },
            { path: "docs/old.md", mode: "100644", type: "blob", sha: null }
          ]
        }
      })
      const commit = yield* conforming("POST", `${path}/git/commits`, 201, {
        authorization,
        body: { message: "Add new.ts", tree: text(at(tree.body, "sha")), parents: [base] }
      })
      const commitSha = text(at(commit.body, "sha"))

      const created = yield* conforming("POST", `${path}/git/refs`, 201, {
        authorization,
        body: { ref: `refs/heads/${branchName}`, sha: commitSha }
      })
      assert.strictEqual(at(created.body, "ref"), `refs/heads/${branchName}`)

      const again = yield* conforming("POST", `${path}/git/commits`, 201, {
        authorization,
        body: { message: "Add new.ts, again", tree: text(at(tree.body, "sha")), parents: [base] }
      })
      const moved = yield* conforming("PATCH", `${path}/git/refs/heads/${branchName}`, 200, {
        authorization,
        body: { sha: text(at(again.body, "sha")), force: true }
      })
      assert.strictEqual(at(moved.body, "object", "sha"), at(again.body, "sha"))

      const opened = yield* conforming("POST", `${path}/pulls`, 201, {
        authorization,
        body: {
          title: "Add new.ts",
          head: `${OWNER}:${branchName}`,
          base: "main",
          body: "Bosun's change.",
          draft: true
        }
      })
      const number = integer(at(opened.body, "number"))
      assert.strictEqual(at(opened.body, "draft"), true)

      const found = yield* conforming("GET", `${path}/pulls`, 200, {
        authorization,
        query: { head: `${OWNER}:${branchName}`, state: "all" }
      })
      assert.strictEqual(at(found.body, 0, "number"), number)
    })
  )

  // Runs last (the tests of a file run in order): what the tests above called is in `called`.
  it("every REST operation the server calls was answered above", () => {
    const missing = productionOperations().filter((operation) => {
      const [method = "", template = ""] = operation.split(" ")
      // A parameter GitHub marks multi-segment (`contents/{path}`, `git/refs/{ref}`) spans slashes.
      const multi = new Set(
        (restOperation(method, `/api/v3${template}`)?.parameters ?? [])
          .filter((parameter) => parameter["x-multi-segment"] === true)
          .map((parameter) => parameter.name)
      )
      const pattern = new RegExp(
        `^${template
          .split(/(\{[^}]+\})/)
          .map((part) => {
            const name = /^\{([^}]+)\}$/.exec(part)?.[1]
            if (name === undefined) return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
            return multi.has(name) ? ".+" : "[^/]+"
          })
          .join("")}$`
      )
      return !called.some((call) => call.method === method && pattern.test(call.path))
    })
    assert.deepStrictEqual(missing, [])
  })
})
