/**
 * The fake GitHub's Git Data API, contents and pull request creation, driven by the real
 * `@octokit/request` client with an installation token, on a real git repository: a file read
 * through contents, a tree built on the base (a new nested file, a modified one, a deleted one),
 * committed, put on a new branch and opened as a draft pull request are really in the git
 * repository; GitHub's 401/404/422 answers; scripted failures reach these routes too.
 */
import { generateKeyPairSync, sign } from "node:crypto"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, layer } from "@effect/vitest"
import { request } from "@octokit/request"
import { RequestError } from "@octokit/request-error"
import { Effect, Layer } from "effect"
import { FakeGithub } from "../src/FakeGithub.ts"
import { makeGitRepository, runGit } from "../src/GitRepository.ts"

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
const APP_ID = 7171
const INSTALLATION_ID = 710
const OTHER_INSTALLATION_ID = 711
const OWNER = "acme"
/** One repository per test: the fake (shared by the tests) keeps the pull requests each opens. */
const NAMES = ["flow", "moves", "invalid", "auth", "failures"] as const
const BRANCH = "bosun/change"

/** The App reaches the tests' repositories (and acme/plain, without a git repository) through 710, only acme/tools through 711. */
const Fixture = Layer.effectDiscard(
  Effect.map(FakeGithub, (fake) => {
    fake.addApp({
      clientId: "Iv1.gitdata",
      clientSecret: "gitdata-client-secret",
      appId: APP_ID,
      publicKey: publicKey.export({ type: "spki", format: "pem" }).toString()
    })
    const account = { id: 9300, login: OWNER, type: "Organization" } as const
    fake.addInstallation({
      id: INSTALLATION_ID,
      appId: APP_ID,
      account,
      repositories: [...NAMES.map((name) => `${OWNER}/${name}`), "acme/plain"]
    })
    fake.addInstallation({ id: OTHER_INSTALLATION_ID, appId: APP_ID, account, repositories: ["acme/tools"] })
  })
).pipe(Layer.provideMerge(FakeGithub.layer))

/** A JWT the App signs (RS256), as GitHub's App authentication expects it. */
const appJwt = () => {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url")
  const now = Math.floor(Date.now() / 1000)
  const unsigned = `${encode({ alg: "RS256", typ: "JWT" })}.${encode({ iss: APP_ID, iat: now - 60, exp: now + 540 })}`
  return `${unsigned}.${sign("RSA-SHA256", Buffer.from(unsigned), privateKey).toString("base64url")}`
}

/** An Octokit client for the fake's REST API with an installation token minted the way Bosun mints it. */
const client = (installationId: number) =>
  Effect.flatMap(FakeGithub, (fake) =>
    Effect.promise(async () => {
      const { data } = await request("POST /app/installations/{installation_id}/access_tokens", {
        baseUrl: fake.apiUrl,
        installation_id: installationId,
        headers: { authorization: `bearer ${appJwt()}` }
      })
      return request.defaults({ baseUrl: fake.apiUrl, headers: { authorization: `token ${data.token}` } })
    })
  )

/** The status and body of the GitHub error `call` fails with (fails the test when it succeeds). */
const failure = (call: () => Promise<unknown>) =>
  Effect.promise(() =>
    call().then(
      () => assert.fail("the call succeeded"),
      (error: unknown) => {
        if (!(error instanceof RequestError)) throw error
        return { status: error.status, data: error.response?.data }
      }
    )
  )

/** A fresh directory, removed with the test's scope. */
const tempDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "bosun-git-data-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

/** `acme/<name>` served by the fake: `main` with a README, a nested source file and a doc to delete. */
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
  fake.addGitRepository(repository, repo.dir)
  const github = yield* client(INSTALLATION_ID)
  return { fake, repo, base, github, repository, ids: { owner: OWNER, repo: name } }
})

/** `git show <rev>:<path>` in the served bare repository (undefined when git finds nothing there). */
const show = (dir: string, rev: string, path: string) =>
  Effect.promise(() =>
    runGit(dir, ["show", `${rev}:${path}`]).then(
      (text) => text,
      () => undefined
    )
  )

layer(Fixture, { excludeTestServices: true })("FakeGithub Git Data API", (it) => {
  it.effect("a change is read, built as a tree, committed, put on a branch and opened as a draft pull request", () =>
    Effect.gen(function* () {
      const { fake, repo, base, github, repository, ids } = yield* servedRepository("flow")

      // A file through contents, on a branch and on a sha.
      const readme = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/contents/{path}", { ...ids, path: "README.md", ref: "main" })
      )
      assert.strictEqual(readme.status, 200)
      assert.isFalse(Array.isArray(readme.data))
      const file = readme.data as {
        type: string
        encoding: string
        content: string
        sha: string
        size: number
        name: string
        path: string
      }
      assert.deepInclude(file, { type: "file", encoding: "base64", name: "README.md", path: "README.md", size: 6 })
      assert.strictEqual(Buffer.from(file.content, "base64").toString("utf8"), "# api\n")
      assert.strictEqual(
        file.sha,
        (yield* Effect.promise(() => runGit(repo.dir, ["rev-parse", "main:README.md"]))).trim()
      )
      const nested = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/contents/{path}", { ...ids, path: "src/app.ts", ref: base })
      )
      const nestedFile = nested.data as { content: string; path: string; name: string }
      assert.strictEqual(Buffer.from(nestedFile.content, "base64").toString("utf8"), "export const a = 1\n")
      assert.strictEqual(nestedFile.path, "src/app.ts")
      assert.strictEqual(nestedFile.name, "app.ts")
      for (const [path, ref] of [
        ["missing.md", "main"],
        ["src", "main"],
        ["README.md", "no-such-branch"]
      ] as const) {
        const missing = yield* failure(() => github("GET /repos/{owner}/{repo}/contents/{path}", { ...ids, path, ref }))
        assert.deepStrictEqual(missing, { status: 404, data: { message: "Not Found" } })
      }

      // The base branch and its commit.
      const main = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/git/ref/{ref}", { ...ids, ref: "heads/main" })
      )
      assert.strictEqual(main.data.ref, "refs/heads/main")
      assert.deepInclude(main.data.object, { sha: base, type: "commit" })
      assert.strictEqual(
        (yield* failure(() => github("GET /repos/{owner}/{repo}/git/ref/{ref}", { ...ids, ref: "heads/nope" }))).status,
        404
      )
      const baseCommit = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", { ...ids, commit_sha: base })
      )
      assert.strictEqual(baseCommit.data.sha, base)
      assert.deepStrictEqual(baseCommit.data.parents, [])
      assert.strictEqual(baseCommit.data.message, "Initial commit\n")
      assert.strictEqual(
        baseCommit.data.tree.sha,
        (yield* Effect.promise(() => runGit(repo.dir, ["rev-parse", `${base}^{tree}`]))).trim()
      )

      // A tree on the base: a new nested file, a modified file, a deleted file, an existing blob under a new path.
      const tree = yield* Effect.promise(() =>
        github("POST /repos/{owner}/{repo}/git/trees", {
          ...ids,
          base_tree: baseCommit.data.tree.sha,
          tree: [
            { path: "src/new.ts", mode: "100644", type: "blob", content: "export const b = 2\n" },
            { path: "README.md", mode: "100644", type: "blob", content: "# api\n\nChanged by Bosun.\n" },
            { path: "docs/old.md", mode: "100644", type: "blob", sha: null },
            { path: "docs/copy.md", mode: "100644", type: "blob", sha: file.sha }
          ]
        })
      )
      assert.strictEqual(tree.status, 201)
      assert.deepStrictEqual(
        tree.data.tree.map((entry) => [entry.path, entry.type, entry.mode]),
        [
          ["README.md", "blob", "100644"],
          ["docs", "tree", "040000"],
          ["src", "tree", "040000"]
        ]
      )
      const listing = yield* Effect.promise(() => runGit(repo.dir, ["ls-tree", "-r", "--name-only", tree.data.sha]))
      assert.deepStrictEqual(listing.trim().split("\n"), ["README.md", "docs/copy.md", "src/app.ts", "src/new.ts"])

      const commit = yield* Effect.promise(() =>
        github("POST /repos/{owner}/{repo}/git/commits", {
          ...ids,
          message: "Add new.ts\n\nAnd say so in the README.",
          tree: tree.data.sha,
          parents: [base],
          author: { name: "Bosun", email: "bosun@example.com", date: "2025-01-02T03:04:05Z" }
        })
      )
      assert.strictEqual(commit.status, 201)
      assert.strictEqual(commit.data.tree.sha, tree.data.sha)
      assert.deepStrictEqual(
        commit.data.parents.map((parent) => parent.sha),
        [base]
      )
      assert.strictEqual(commit.data.message, "Add new.ts\n\nAnd say so in the README.")
      assert.deepStrictEqual(commit.data.author, {
        name: "Bosun",
        email: "bosun@example.com",
        date: "2025-01-02T03:04:05Z"
      })
      assert.strictEqual(
        (yield* Effect.promise(() => runGit(repo.dir, ["cat-file", "-t", commit.data.sha]))).trim(),
        "commit"
      )

      // The branch, once only.
      const ref = yield* Effect.promise(() =>
        github("POST /repos/{owner}/{repo}/git/refs", { ...ids, ref: `refs/heads/${BRANCH}`, sha: commit.data.sha })
      )
      assert.strictEqual(ref.status, 201)
      assert.strictEqual(ref.data.ref, `refs/heads/${BRANCH}`)
      assert.deepInclude(ref.data.object, { sha: commit.data.sha, type: "commit" })
      const again = yield* failure(() =>
        github("POST /repos/{owner}/{repo}/git/refs", { ...ids, ref: `refs/heads/${BRANCH}`, sha: base })
      )
      assert.strictEqual(again.status, 422)
      assert.deepInclude(again.data, {
        message: "Reference already exists",
        documentation_url: "https://docs.github.com/rest/git/refs#create-a-reference"
      })
      const branch = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/git/ref/{ref}", { ...ids, ref: `heads/${BRANCH}` })
      )
      assert.strictEqual(branch.data.object.sha, commit.data.sha)
      const viaBranches = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/branches/{branch}", { ...ids, branch: BRANCH })
      )
      assert.strictEqual(viaBranches.data.commit.sha, commit.data.sha)

      // The pull request, once only.
      const opened = yield* Effect.promise(() =>
        github("POST /repos/{owner}/{repo}/pulls", {
          ...ids,
          title: "Add new.ts",
          head: `${OWNER}:${BRANCH}`,
          base: "main",
          body: "Bosun's change.",
          draft: true
        })
      )
      assert.strictEqual(opened.status, 201)
      assert.strictEqual(opened.data.number, 1)
      assert.strictEqual(opened.data.html_url, `https://github.com/${repository}/pull/1`)
      assert.deepInclude(opened.data, { state: "open", draft: true, title: "Add new.ts", body: "Bosun's change." })
      assert.deepInclude(opened.data.head, { ref: BRANCH, sha: commit.data.sha, label: `${OWNER}:${BRANCH}` })
      assert.deepInclude(opened.data.base, { ref: "main", sha: base })
      assert.strictEqual(opened.data.user?.login, "bosun[bot]")

      const listed = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/pulls", { ...ids, head: `${OWNER}:${BRANCH}`, state: "open" })
      )
      assert.deepStrictEqual(
        listed.data.map((pull) => pull.number),
        [1]
      )
      const otherHead = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/pulls", { ...ids, head: `${OWNER}:other`, state: "all" })
      )
      assert.deepStrictEqual(otherHead.data, [])
      const closedOnly = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/pulls", { ...ids, head: `${OWNER}:${BRANCH}`, state: "closed" })
      )
      assert.deepStrictEqual(closedOnly.data, [])

      const duplicate = yield* failure(() =>
        github("POST /repos/{owner}/{repo}/pulls", { ...ids, title: "Again", head: `${OWNER}:${BRANCH}`, base: "main" })
      )
      assert.strictEqual(duplicate.status, 422)
      assert.deepInclude(duplicate.data, {
        message: "Validation Failed",
        errors: [
          { resource: "PullRequest", code: "custom", message: `A pull request already exists for ${OWNER}:${BRANCH}.` }
        ]
      })

      // The existing routes and the helpers see it.
      const fetched = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/pulls/{pull_number}", { ...ids, pull_number: 1 })
      )
      assert.deepInclude(fetched.data, { number: 1, draft: true, title: "Add new.ts" })
      assert.deepStrictEqual(
        fake.createdPulls(repository).map(({ number, title, body, head, base: into, draft, user }) => ({
          number,
          title,
          body,
          head,
          base: into,
          draft,
          user
        })),
        [
          {
            number: 1,
            title: "Add new.ts",
            body: "Bosun's change.",
            head: { ref: BRANCH, sha: commit.data.sha },
            base: { ref: "main", sha: base },
            draft: true,
            user: { login: "bosun[bot]", type: "Bot" }
          }
        ]
      )

      // The branch's files are really in the git repository.
      assert.strictEqual(yield* show(repo.dir, BRANCH, "src/new.ts"), "export const b = 2\n")
      assert.strictEqual(yield* show(repo.dir, BRANCH, "README.md"), "# api\n\nChanged by Bosun.\n")
      assert.strictEqual(yield* show(repo.dir, BRANCH, "src/app.ts"), "export const a = 1\n")
      assert.strictEqual(yield* show(repo.dir, BRANCH, "docs/copy.md"), "# api\n")
      assert.isUndefined(yield* show(repo.dir, BRANCH, "docs/old.md"))
      assert.strictEqual(yield* fake.fileAt(repository, BRANCH, "src/new.ts"), "export const b = 2\n")
      assert.isUndefined(yield* fake.fileAt(repository, BRANCH, "docs/old.md"))
      assert.strictEqual(yield* fake.fileAt(repository, "main", "docs/old.md"), "obsolete\n")
      assert.deepStrictEqual(yield* fake.refs(repository), {
        [`refs/heads/${BRANCH}`]: commit.data.sha,
        "refs/heads/main": base
      })
      // And the changes GitHub would list are the ones made.
      assert.deepStrictEqual(yield* Effect.promise(() => repo.changedPaths("main", BRANCH)), [
        "README.md",
        "docs/copy.md",
        "docs/old.md",
        "src/new.ts"
      ])
    })
  )

  it.effect("a branch moves by fast-forward unless forced, and its open pull request follows it", () =>
    Effect.gen(function* () {
      const { fake, base, github, repository, ids } = yield* servedRepository("moves")
      const commitOn = (parent: string, path: string, content: string) =>
        Effect.promise(async () => {
          const { data: parentCommit } = await github("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", {
            ...ids,
            commit_sha: parent
          })
          const { data: tree } = await github("POST /repos/{owner}/{repo}/git/trees", {
            ...ids,
            base_tree: parentCommit.tree.sha,
            tree: [{ path, mode: "100644", type: "blob", content }]
          })
          const { data: commit } = await github("POST /repos/{owner}/{repo}/git/commits", {
            ...ids,
            message: `Write ${path}`,
            tree: tree.sha,
            parents: [parent]
          })
          return commit
        })
      const first = yield* commitOn(base, "a.txt", "one\n")
      // Without an author, the App's bot authors and commits.
      assert.strictEqual(first.author.name, "bosun[bot]")
      assert.strictEqual(first.committer.name, "bosun[bot]")
      yield* Effect.promise(() =>
        github("POST /repos/{owner}/{repo}/git/refs", { ...ids, ref: `refs/heads/${BRANCH}`, sha: first.sha })
      )
      const opened = yield* Effect.promise(() =>
        github("POST /repos/{owner}/{repo}/pulls", { ...ids, title: "A", head: BRANCH, base: "main" })
      )
      assert.isFalse(opened.data.draft)

      const second = yield* commitOn(first.sha, "b.txt", "two\n")
      const moved = yield* Effect.promise(() =>
        github("PATCH /repos/{owner}/{repo}/git/refs/{ref}", { ...ids, ref: `heads/${BRANCH}`, sha: second.sha })
      )
      assert.strictEqual(moved.status, 200)
      assert.strictEqual(moved.data.object.sha, second.sha)
      const pull = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/pulls/{pull_number}", { ...ids, pull_number: opened.data.number })
      )
      assert.strictEqual(pull.data.head.sha, second.sha)

      // Back to the base is not a fast-forward.
      const backwards = yield* failure(() =>
        github("PATCH /repos/{owner}/{repo}/git/refs/{ref}", { ...ids, ref: `heads/${BRANCH}`, sha: base })
      )
      assert.strictEqual(backwards.status, 422)
      assert.deepInclude(backwards.data, { message: "Update is not a fast forward" })
      assert.strictEqual((yield* fake.refs(repository))[`refs/heads/${BRANCH}`], second.sha)
      const rewritten = yield* commitOn(base, "c.txt", "three\n")
      const forced = yield* Effect.promise(() =>
        github("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
          ...ids,
          ref: `heads/${BRANCH}`,
          sha: rewritten.sha,
          force: true
        })
      )
      assert.strictEqual(forced.data.object.sha, rewritten.sha)
      assert.strictEqual(yield* fake.fileAt(repository, BRANCH, "c.txt"), "three\n")
      assert.isUndefined(yield* fake.fileAt(repository, BRANCH, "b.txt"))
      assert.strictEqual(fake.createdPulls(repository)[0]?.head.sha, rewritten.sha)

      const unknownBranch = yield* failure(() =>
        github("PATCH /repos/{owner}/{repo}/git/refs/{ref}", { ...ids, ref: "heads/nope", sha: base })
      )
      assert.strictEqual(unknownBranch.status, 422)
      assert.deepInclude(unknownBranch.data, { message: "Reference does not exist" })
    })
  )

  it.effect("invalid trees, commits and pull requests get GitHub's 422", () =>
    Effect.gen(function* () {
      const { base, github, ids } = yield* servedRepository("invalid")
      const tree = (baseTree: string, entries: ReadonlyArray<Record<string, unknown>>) =>
        failure(() =>
          github("POST /repos/{owner}/{repo}/git/trees", {
            ...ids,
            base_tree: baseTree,
            tree: entries as Array<{ path: string; mode: "100644"; type: "blob" }>
          })
        )
      const entry = { path: "x.txt", mode: "100644", type: "blob", content: "x\n" }
      // A commit is not a tree, and an unknown object is nothing.
      for (const invalidBase of [base, "0123456789abcdef0123456789abcdef01234567", "main"]) {
        assert.deepStrictEqual(yield* tree(invalidBase, [entry]), {
          status: 422,
          data: {
            message: "base_tree is not a valid tree oid",
            documentation_url: "https://docs.github.com/rest/git/trees#create-a-tree",
            status: "422"
          }
        })
      }
      const { data: baseCommit } = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", { ...ids, commit_sha: base })
      )
      const removeMissing = yield* tree(baseCommit.tree.sha, [
        { path: "nope.md", mode: "100644", type: "blob", sha: null }
      ])
      assert.strictEqual(removeMissing.status, 422)
      assert.strictEqual((yield* tree(baseCommit.tree.sha, [{ ...entry, path: "../escape" }])).status, 422)
      assert.strictEqual((yield* tree(baseCommit.tree.sha, [{ ...entry, sha: base }])).status, 422)
      assert.strictEqual((yield* tree(baseCommit.tree.sha, [{ ...entry, content: undefined, sha: base }])).status, 422)

      const badCommit = yield* failure(() =>
        github("POST /repos/{owner}/{repo}/git/commits", { ...ids, message: "x", tree: base, parents: [] })
      )
      assert.deepInclude(badCommit, { status: 422 })
      const badParent = yield* failure(() =>
        github("POST /repos/{owner}/{repo}/git/commits", {
          ...ids,
          message: "x",
          tree: baseCommit.tree.sha,
          parents: [baseCommit.tree.sha]
        })
      )
      assert.deepInclude(badParent, { status: 422 })
      const badRef = yield* failure(() =>
        github("POST /repos/{owner}/{repo}/git/refs", { ...ids, ref: "heads/no-refs-prefix", sha: base })
      )
      assert.strictEqual(badRef.status, 422)

      const missingHead = yield* failure(() =>
        github("POST /repos/{owner}/{repo}/pulls", { ...ids, title: "T", head: `${OWNER}:nope`, base: "main" })
      )
      assert.deepStrictEqual(missingHead, {
        status: 422,
        data: {
          message: "Validation Failed",
          errors: [{ resource: "PullRequest", field: "head", code: "invalid" }],
          documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
          status: "422"
        }
      })
      const missingBase = yield* failure(() =>
        github("POST /repos/{owner}/{repo}/pulls", { ...ids, title: "T", head: "main", base: "nope" })
      )
      assert.strictEqual(missingBase.status, 422)
      // A branch at the base's commit has nothing to merge.
      yield* Effect.promise(() =>
        github("POST /repos/{owner}/{repo}/git/refs", { ...ids, ref: "refs/heads/same", sha: base })
      )
      const empty = yield* failure(() =>
        github("POST /repos/{owner}/{repo}/pulls", { ...ids, title: "T", head: "same", base: "main" })
      )
      assert.deepInclude(empty.data, {
        errors: [{ resource: "PullRequest", code: "custom", message: "No commits between main and same" }]
      })
    })
  )

  it.effect("an unknown token gets 401, an installation that does not reach the repository 404", () =>
    Effect.gen(function* () {
      const { fake, repository, ids } = yield* servedRepository("auth")
      const unknown = request.defaults({ baseUrl: fake.apiUrl, headers: { authorization: "token ghs_unknown" } })
      const calls = (github: typeof unknown) => [
        () => github("GET /repos/{owner}/{repo}/contents/{path}", { ...ids, path: "README.md" }),
        () => github("GET /repos/{owner}/{repo}/git/ref/{ref}", { ...ids, ref: "heads/main" }),
        () =>
          github("POST /repos/{owner}/{repo}/git/trees", {
            ...ids,
            tree: [{ path: "x", mode: "100644", type: "blob", content: "x" }]
          }),
        () => github("POST /repos/{owner}/{repo}/pulls", { ...ids, title: "T", head: "main", base: "main" }),
        () => github("GET /repos/{owner}/{repo}/pulls", { ...ids })
      ]
      for (const call of calls(unknown)) {
        assert.deepStrictEqual(yield* failure(call), { status: 401, data: { message: "Bad credentials" } })
      }
      const other = yield* client(OTHER_INSTALLATION_ID)
      for (const call of calls(other)) {
        assert.deepStrictEqual(yield* failure(call), { status: 404, data: { message: "Not Found" } })
      }
      // A repository the installation reaches without a git repository behind it has no contents.
      const github = yield* client(INSTALLATION_ID)
      const plain = yield* failure(() =>
        github("GET /repos/{owner}/{repo}/git/ref/{ref}", { owner: OWNER, repo: "plain", ref: "heads/main" })
      )
      assert.strictEqual(plain.status, 404)
      assert.deepStrictEqual(fake.createdPulls(repository), [])
    })
  )

  it.effect("scripted failures reach the Git Data and pull request routes", () =>
    Effect.gen(function* () {
      const { fake, base, github, repository, ids } = yield* servedRepository("failures")
      const { data: baseCommit } = yield* Effect.promise(() =>
        github("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", { ...ids, commit_sha: base })
      )
      const createTree = () =>
        github("POST /repos/{owner}/{repo}/git/trees", {
          ...ids,
          base_tree: baseCommit.tree.sha,
          tree: [{ path: "x.txt", mode: "100644", type: "blob", content: "x\n" }]
        })
      fake.failNext({ method: "POST", path: /\/git\/trees$/, status: 502, times: 2 })
      assert.strictEqual((yield* failure(createTree)).status, 502)
      assert.strictEqual((yield* failure(createTree)).status, 502)
      const tree = yield* Effect.promise(createTree)
      assert.strictEqual(tree.status, 201)
      const { data: commit } = yield* Effect.promise(() =>
        github("POST /repos/{owner}/{repo}/git/commits", { ...ids, message: "x", tree: tree.data.sha, parents: [base] })
      )
      yield* Effect.promise(() =>
        github("POST /repos/{owner}/{repo}/git/refs", { ...ids, ref: `refs/heads/${BRANCH}`, sha: commit.sha })
      )

      const open = () => github("POST /repos/{owner}/{repo}/pulls", { ...ids, title: "T", head: BRANCH, base: "main" })
      fake.failNext({ method: "POST", path: new RegExp(`^/api/v3/repos/${repository}/pulls$`), status: 503 })
      assert.strictEqual((yield* failure(open)).status, 503)
      // The failed call opened nothing; the next one opens the pull request.
      assert.deepStrictEqual(fake.createdPulls(repository), [])
      assert.strictEqual((yield* Effect.promise(open)).data.number, 1)

      fake.failWith(503)
      const outage = yield* failure(() =>
        github("GET /repos/{owner}/{repo}/contents/{path}", { ...ids, path: "README.md" })
      )
      fake.failWith(undefined)
      assert.strictEqual(outage.status, 503)
    })
  )
})
