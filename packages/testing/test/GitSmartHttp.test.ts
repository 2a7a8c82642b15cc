/**
 * The fake GitHub's git smart HTTP: real `git` clones and fetches real repositories from it with
 * an installation token the way Bosun's runtime does (`-c http.extraHeader=Authorization: Basic`),
 * is refused without one, outside the installation and for a push, and `makeGitRepository`'s
 * `pullFiles` gives GitHub's `pulls/:n/files` shape.
 */
import { execFile } from "node:child_process"
import { generateKeyPairSync, sign } from "node:crypto"
import { mkdtemp, readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { FakeGithub } from "../src/FakeGithub.ts"
import { isolatedGitEnv, makeGitRepository } from "../src/GitRepository.ts"

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
const APP_ID = 7070
const INSTALLATION_ID = 700
const OTHER_INSTALLATION_ID = 701
const REPOSITORY = "acme/api"

/** The App reaches acme/api through installation 700 and only acme/tools through 701. */
const Fixture = Layer.effectDiscard(
  Effect.map(FakeGithub, (fake) => {
    fake.addApp({
      clientId: "Iv1.git",
      clientSecret: "git-client-secret",
      appId: APP_ID,
      publicKey: publicKey.export({ type: "spki", format: "pem" }).toString()
    })
    const account = { id: 9200, login: "acme", type: "Organization" } as const
    fake.addInstallation({ id: INSTALLATION_ID, appId: APP_ID, account, repositories: [REPOSITORY] })
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

const installationToken = (installationId: number) =>
  Effect.flatMap(FakeGithub, (fake) =>
    Effect.promise(async () => {
      const response = await fetch(`${fake.apiUrl}/app/installations/${installationId}/access_tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${appJwt()}`, accept: "application/vnd.github+json" }
      })
      const { token } = (await response.json()) as { token: string }
      return token
    })
  )

/** The runtime's credential arguments (packages/runtime/src/Workspace.ts). */
const authArgs = (token: string) => [
  "-c",
  `http.extraHeader=Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`
]

/** Runs git without any system or user configuration; never fails, answers how it exited. */
const git = (cwd: string, args: ReadonlyArray<string>) =>
  Effect.promise(
    () =>
      new Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resolve) =>
        execFile("git", [...args], { cwd, env: isolatedGitEnv(), encoding: "utf8" }, (error, stdout, stderr) =>
          resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
        )
      )
  )

/** A fresh directory, removed with the test's scope. */
const tempDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "bosun-git-http-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

/** acme/api served by the fake: `main` with a README and pull request 7 changing it. */
const servedRepository = Effect.gen(function* () {
  const fake = yield* FakeGithub
  const root = yield* tempDir
  const repo = yield* Effect.promise(() => makeGitRepository(root, REPOSITORY))
  const base = yield* Effect.promise(() =>
    repo.commit("main", { "README.md": "# api\n", "src/app.ts": "export const a = 1\n" }, "Initial commit")
  )
  const head = yield* Effect.promise(() =>
    repo.commit("feature", { "src/app.ts": "export const a = 2\n", "src/new.ts": "export {}\n" }, "Feature", {
      from: "main"
    })
  )
  yield* Effect.promise(() => repo.setRef("refs/pull/7/head", head))
  fake.addGitRepository(REPOSITORY, repo.dir)
  return { fake, root, repo, base, head, url: `${fake.url}/${REPOSITORY}.git` }
})

layer(Fixture)("FakeGithub git smart HTTP", (it) => {
  it.effect("a clone with a valid installation token checks out the pull request head", () =>
    Effect.gen(function* () {
      const { fake, root, head, url } = yield* servedRepository
      const token = yield* installationToken(INSTALLATION_ID)
      const dir = join(root, "checkout")
      // `clone --branch` takes a branch or tag name only, so the pull request ref is fetched after cloning.
      const clone = yield* git(root, [...authArgs(token), "clone", "--quiet", "--", url, dir])
      assert.strictEqual(clone.code, 0, clone.stderr)
      const fetched = yield* git(dir, [...authArgs(token), "fetch", "--quiet", "origin", "refs/pull/7/head"])
      assert.strictEqual(fetched.code, 0, fetched.stderr)
      const checkout = yield* git(dir, ["checkout", "--quiet", "--detach", head])
      assert.strictEqual(checkout.code, 0, checkout.stderr)

      assert.strictEqual((yield* git(dir, ["rev-parse", "HEAD"])).stdout.trim(), head)
      assert.strictEqual(yield* Effect.promise(() => readFile(join(dir, "src/app.ts"), "utf8")), "export const a = 2\n")
      assert.strictEqual(yield* Effect.promise(() => readFile(join(dir, "src/new.ts"), "utf8")), "export {}\n")
      assert.strictEqual(yield* Effect.promise(() => readFile(join(dir, "README.md"), "utf8")), "# api\n")
      // The token is sent as a header only, never kept in the clone's configuration.
      assert.notInclude(yield* Effect.promise(() => readFile(join(dir, ".git/config"), "utf8")), token)
      const served = fake.requests.filter((request) => request.path.startsWith(`/${REPOSITORY}.git/`))
      assert.deepStrictEqual(
        [...new Set(served.map((request) => `${request.method} ${request.path}?${request.query}`))],
        [`GET /${REPOSITORY}.git/info/refs?service=git-upload-pack`, `POST /${REPOSITORY}.git/git-upload-pack?`]
      )
    })
  )

  it.effect("the runtime's `clone --branch refs/pull/N/head` is refused by git itself, not by the server", () =>
    Effect.gen(function* () {
      const { root, url } = yield* servedRepository
      const token = yield* installationToken(INSTALLATION_ID)
      const byPullRef = yield* git(root, [
        ...authArgs(token),
        "clone",
        "--quiet",
        "--branch",
        "refs/pull/7/head",
        "--",
        url,
        join(root, "by-pull-ref")
      ])
      assert.strictEqual(byPullRef.code, 128)
      assert.include(byPullRef.stderr, "Remote branch refs/pull/7/head not found in upstream origin")
      // The same command shape with a branch name clones.
      const byBranch = yield* git(root, [
        ...authArgs(token),
        "clone",
        "--quiet",
        "--branch",
        "feature",
        "--",
        url,
        join(root, "by-branch")
      ])
      assert.strictEqual(byBranch.code, 0, byBranch.stderr)
    })
  )

  it.effect("advertises protocol v2 when git asks for it", () =>
    Effect.gen(function* () {
      const { url } = yield* servedRepository
      const token = yield* installationToken(INSTALLATION_ID)
      const response = yield* Effect.promise(() =>
        fetch(`${url}/info/refs?service=git-upload-pack`, {
          headers: {
            authorization: `Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`,
            "git-protocol": "version=2"
          }
        })
      )
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers.get("content-type"), "application/x-git-upload-pack-advertisement")
      const advertisement = yield* Effect.promise(() => response.text())
      // A v2 advertisement is the capability list alone: no refs, no `# service=` line.
      assert.isTrue(advertisement.startsWith("000eversion 2\n"), advertisement)
      assert.match(advertisement, /^[0-9a-f]{4}ls-refs/m)
      assert.match(advertisement, /^[0-9a-f]{4}fetch/m)
    })
  )

  it.effect("serves a negotiation git compresses with gzip", () =>
    Effect.gen(function* () {
      const { fake, root, repo, url } = yield* servedRepository
      // Thirty branches on distinct commits make the clone's list of wants larger than the 1 KiB
      // above which git gzips its upload-pack request.
      const tips: Array<string> = []
      for (let index = 0; index < 30; index++) {
        tips.push(
          yield* Effect.promise(() =>
            repo.commit(`topic-${index}`, { [`topic-${index}.txt`]: `${index}\n` }, `Topic ${index}`, { from: "main" })
          )
        )
      }
      const token = yield* installationToken(INSTALLATION_ID)
      const dir = join(root, "all")
      const clone = yield* git(root, [...authArgs(token), "clone", "--quiet", "--", url, dir])
      assert.strictEqual(clone.code, 0, clone.stderr)
      const gzipped = fake.requests.filter(
        (request) => request.path === `/${REPOSITORY}.git/git-upload-pack` && request.body.startsWith("\x1f")
      )
      assert.isAbove(gzipped.length, 0)
      for (const [index, tip] of tips.entries()) {
        assert.strictEqual((yield* git(dir, ["rev-parse", `origin/topic-${index}`])).stdout.trim(), tip)
      }
    })
  )

  it.effect("without credentials the server answers 401 with a Basic challenge and git fails", () =>
    Effect.gen(function* () {
      const { root, url } = yield* servedRepository
      const response = yield* Effect.promise(() => fetch(`${url}/info/refs?service=git-upload-pack`))
      assert.strictEqual(response.status, 401)
      assert.strictEqual(response.headers.get("www-authenticate"), 'Basic realm="GitHub"')
      const clone = yield* git(root, ["clone", "--quiet", "--", url, join(root, "anonymous")])
      assert.strictEqual(clone.code, 128)
      assert.include(clone.stderr, "could not read Username")

      const unknown = yield* git(root, [...authArgs("ghs_unknown"), "clone", "--quiet", "--", url, join(root, "bad")])
      assert.strictEqual(unknown.code, 128)
      assert.include(unknown.stderr, "could not read Username")
    })
  )

  it.effect("a token of an installation that does not reach the repository gets 404 and git fails", () =>
    Effect.gen(function* () {
      const { fake, root, url } = yield* servedRepository
      const other = yield* installationToken(OTHER_INSTALLATION_ID)
      const clone = yield* git(root, [...authArgs(other), "clone", "--quiet", "--", url, join(root, "other")])
      assert.strictEqual(clone.code, 128)
      assert.include(clone.stderr, "remote: Repository not found.")
      assert.include(clone.stderr, `repository '${url}/' not found`)

      // A repository the installation reaches but that has no git repository behind it is not found either.
      const token = yield* installationToken(INSTALLATION_ID)
      const response = yield* Effect.promise(() =>
        fetch(`${fake.url}/acme/unknown.git/info/refs?service=git-upload-pack`, {
          headers: { authorization: `Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}` }
        })
      )
      assert.strictEqual(response.status, 404)
      assert.strictEqual(yield* Effect.promise(() => response.text()), "Repository not found.\n")
    })
  )

  it.effect("a push is refused with 403", () =>
    Effect.gen(function* () {
      const { root, repo, url } = yield* servedRepository
      const token = yield* installationToken(INSTALLATION_ID)
      const dir = join(root, "pusher")
      assert.strictEqual((yield* git(root, [...authArgs(token), "clone", "--quiet", "--", url, dir])).code, 0)
      assert.strictEqual((yield* git(dir, ["commit", "--quiet", "--allow-empty", "-m", "Pushed"])).code, 0)
      const push = yield* git(dir, [...authArgs(token), "push", "--quiet", "origin", "HEAD:refs/heads/pushed"])
      assert.strictEqual(push.code, 128)
      assert.include(push.stderr, "403")
      assert.strictEqual((yield* git(repo.dir, ["branch", "--list", "pushed"])).stdout, "")

      const response = yield* Effect.promise(() =>
        fetch(`${url}/git-receive-pack`, {
          method: "POST",
          headers: {
            authorization: `Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`,
            "content-type": "application/x-git-receive-pack-request"
          },
          body: "0000"
        })
      )
      assert.strictEqual(response.status, 403)
    })
  )

  it.effect("an outage set with failWith fails git too", () =>
    Effect.gen(function* () {
      const { fake, root, url } = yield* servedRepository
      const token = yield* installationToken(INSTALLATION_ID)
      fake.failWith(503)
      const clone = yield* git(root, [...authArgs(token), "clone", "--quiet", "--", url, join(root, "outage")])
      fake.failWith(undefined)
      assert.strictEqual(clone.code, 128)
      assert.include(clone.stderr, "503")
    })
  )

  it.effect("pullFiles lists GitHub's pulls/:n/files for the merge-base diff", () =>
    Effect.gen(function* () {
      const root = yield* tempDir
      const repo = yield* Effect.promise(() => makeGitRepository(root, "acme/files"))
      yield* Effect.promise(() =>
        repo.commit(
          "main",
          {
            "src/app.ts": "const a = 1\nconst b = 2\nconst c = 3\n",
            "docs/old.md": "gone\nsoon\n",
            "logo.png": "PNG\0\x01\x02"
          },
          "Initial commit"
        )
      )
      const head = yield* Effect.promise(() =>
        repo.commit(
          "feature",
          {
            "src/app.ts": "const a = 1\nconst b = 20\nconst bb = 21\nconst c = 3\n",
            "src/new.ts": "export const x = 1\nexport const y = 2",
            "docs/old.md": null,
            "logo.png": "PNG\0\x03\x04"
          },
          "Feature",
          { from: "main" }
        )
      )
      // Moving main on afterwards leaves the pull request's files alone: they are against the merge base.
      yield* Effect.promise(() => repo.commit("main", { "later.txt": "later\n" }, "Later on main"))

      const files = yield* Effect.promise(() => repo.pullFiles("main", head))
      assert.deepStrictEqual(files, [
        {
          filename: "docs/old.md",
          status: "removed",
          additions: 0,
          deletions: 2,
          patch: "@@ -1,2 +0,0 @@\n-gone\n-soon"
        },
        { filename: "logo.png", status: "modified", additions: 0, deletions: 0 },
        {
          filename: "src/app.ts",
          status: "modified",
          additions: 2,
          deletions: 1,
          patch: "@@ -1,3 +1,4 @@\n const a = 1\n-const b = 2\n+const b = 20\n+const bb = 21\n const c = 3"
        },
        {
          filename: "src/new.ts",
          status: "added",
          additions: 2,
          deletions: 0,
          patch: "@@ -0,0 +1,2 @@\n+export const x = 1\n+export const y = 2\n\\ No newline at end of file"
        }
      ])
      assert.deepStrictEqual(yield* Effect.promise(() => repo.changedPaths("main", head)), [
        "docs/old.md",
        "logo.png",
        "src/app.ts",
        "src/new.ts"
      ])
    })
  )

  it.effect("pullFiles reports a rename with its previous path", () =>
    Effect.gen(function* () {
      const root = yield* tempDir
      const repo = yield* Effect.promise(() => makeGitRepository(root, "acme/renames"))
      const content = "one\ntwo\nthree\nfour\nfive\n"
      yield* Effect.promise(() => repo.commit("main", { "a/old.ts": content }, "Initial commit"))
      const head = yield* Effect.promise(() =>
        repo.commit("move", { "a/old.ts": null, "b/new.ts": content.replace("five", "FIVE") }, "Move", {
          from: "main"
        })
      )
      const [file] = yield* Effect.promise(() => repo.pullFiles("main", head))
      assert.deepStrictEqual(file, {
        filename: "b/new.ts",
        status: "renamed",
        additions: 1,
        deletions: 1,
        previous_filename: "a/old.ts",
        patch: "@@ -2,4 +2,4 @@ one\n two\n three\n four\n-five\n+FIVE"
      })
    })
  )
})
