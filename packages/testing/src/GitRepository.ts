/**
 * Real git repositories for tests (test code only): a bare repository the fake GitHub serves over
 * smart HTTP, authored through a working clone beside it, and GitHub's view of a pull request's
 * changes (`pulls/:n/files`) computed by git itself, so fixtures cannot drift from the commits.
 * Every git call is isolated from the machine's and the user's git configuration.
 */
import { execFile } from "node:child_process"
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"

/** A changed file of a pull request, as GitHub's `pulls/{n}/files` lists it. */
export interface FakeGithubPullFile {
  readonly filename: string
  /** added, modified, removed, renamed, copied, changed, unchanged. */
  readonly status: string
  readonly additions: number
  readonly deletions: number
  /** The path before a rename. */
  readonly previous_filename?: string
  /** The unified diff; left out, as GitHub does, for binary and very large files. */
  readonly patch?: string
}

/** An environment for git that depends on no system or global configuration and never prompts. */
export const isolatedGitEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_AUTHOR_NAME: "Bosun Test",
    GIT_AUTHOR_EMAIL: "test@bosun.invalid",
    GIT_COMMITTER_NAME: "Bosun Test",
    GIT_COMMITTER_EMAIL: "test@bosun.invalid"
  }
  for (const name of ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_ASKPASS", "SSH_ASKPASS"]) delete env[name]
  return env
}

/** Runs git in `cwd`; rejects with git's stderr when it exits non-zero. */
export const runGit = (cwd: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = isolatedGitEnv()) =>
  new Promise<string>((resolve, reject) => {
    execFile(
      "git",
      ["-c", "init.defaultBranch=main", ...args],
      { cwd, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error === null) resolve(stdout)
        else reject(new Error(`git ${args.join(" ")} failed in ${cwd}: ${stderr.trim() || error.message}`))
      }
    )
  })

export interface GitRepository {
  /** The bare repository (`${root}/${owner}/${name}.git`), what `FakeGithub.addGitRepository` serves. */
  readonly dir: string
  /**
   * Commits `files` (a null content deletes the file) on `branch` and pushes it; answers the
   * commit's sha. A branch that exists continues from its tip; a new one starts from `from` (a
   * branch or a sha) or, without it, from an empty tree.
   */
  readonly commit: (
    branch: string,
    files: Readonly<Record<string, string | null>>,
    message: string,
    options?: { readonly from?: string }
  ) => Promise<string>
  /** Points `ref` (e.g. `refs/pull/7/head`) of the bare repository at `sha`. */
  readonly setRef: (ref: string, sha: string) => Promise<void>
  /** What GitHub's `pulls/:n/files` lists for a pull request from `head` into `base` (the diff `base...head`). */
  readonly pullFiles: (base: string, head: string) => Promise<ReadonlyArray<FakeGithubPullFile>>
  /** The paths `base...head` changes (a renamed file by its new path), in git's order. */
  readonly changedPaths: (base: string, head: string) => Promise<ReadonlyArray<string>>
}

/** GitHub's `status` for git's `--name-status` letter. */
const STATUSES: Readonly<Record<string, string>> = {
  A: "added",
  M: "modified",
  D: "removed",
  R: "renamed",
  C: "copied",
  T: "changed"
}

// Options every diff shares so that the name-status, numstat and patch listings come out in the
// same order, file for file; renames are detected as GitHub does.
const DIFF = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--find-renames"]

/** The NUL-terminated fields of a `-z` listing. */
const splitZ = (output: string) => (output === "" ? [] : output.replace(/\0$/, "").split("\0"))

/**
 * The patch of each file of a unified diff as GitHub gives it: from the first `@@` to the end of
 * the file's section, without the trailing newline; undefined for a binary file or a file
 * without hunks (a pure rename, an empty new file).
 */
const patchesOf = (diff: string) =>
  diff
    .split(/^(?=diff --git )/m)
    .filter((section) => section.startsWith("diff --git "))
    .map((section) => {
      const start = section.search(/^@@ /m)
      return start < 0 ? undefined : section.slice(start).replace(/\n$/, "")
    })

export const makeGitRepository = async (root: string, fullName: string): Promise<GitRepository> => {
  const [owner, name, ...rest] = fullName.split("/")
  if (owner === undefined || name === undefined || rest.length > 0 || owner === "" || name === "") {
    throw new Error(`makeGitRepository: expected owner/name, got ${fullName}`)
  }
  const dir = join(root, owner, `${name}.git`)
  const work = join(root, owner, `${name}.work`)
  await mkdir(dir, { recursive: true })
  await runGit(dir, ["init", "--quiet", "--bare"])
  await runGit(root, ["clone", "--quiet", "--", dir, work])

  const exists = (ref: string) =>
    runGit(work, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`]).then(
      () => true,
      () => false
    )

  const commit: GitRepository["commit"] = async (branch, files, message, options) => {
    if (await exists(`refs/heads/${branch}`)) {
      await runGit(work, ["checkout", "--quiet", "--force", branch])
    } else if (options?.from !== undefined) {
      await runGit(work, ["checkout", "--quiet", "--force", "-b", branch, options.from])
    } else {
      await runGit(work, ["checkout", "--quiet", "--force", "--orphan", branch])
      await runGit(work, ["rm", "-r", "--quiet", "--force", "--cached", "--ignore-unmatch", "."])
    }
    // Leftovers of another branch (untracked after a switch or an orphan start) must not slip in.
    await runGit(work, ["clean", "--quiet", "-d", "--force", "-x"])
    for (const [path, content] of Object.entries(files)) {
      const file = join(work, path)
      if (content === null) {
        await rm(file, { force: true })
      } else {
        await mkdir(dirname(file), { recursive: true })
        await writeFile(file, content)
      }
    }
    await runGit(work, ["add", "--all"])
    await runGit(work, ["commit", "--quiet", "--allow-empty", "--no-verify", "-m", message])
    await runGit(work, ["push", "--quiet", "--force", "origin", `HEAD:refs/heads/${branch}`])
    return (await runGit(work, ["rev-parse", "HEAD"])).trim()
  }

  const changedPaths: GitRepository["changedPaths"] = async (base, head) =>
    splitZ(await runGit(dir, [...DIFF, "--name-only", "-z", `${base}...${head}`]))

  const pullFiles: GitRepository["pullFiles"] = async (base, head) => {
    const range = `${base}...${head}`
    const [names, counts, diff] = await Promise.all([
      runGit(dir, [...DIFF, "--name-status", "-z", range]).then(splitZ),
      runGit(dir, [...DIFF, "--numstat", "-z", range]).then(splitZ),
      runGit(dir, [...DIFF, "--src-prefix=a/", "--dst-prefix=b/", range])
    ])
    const patches = patchesOf(diff)
    const files: Array<FakeGithubPullFile> = []
    // `--name-status -z`: a letter (with a score for R/C) then one path, or two for R/C.
    // `--numstat -z`: "added\tdeleted\tpath" or, for R/C, "added\tdeleted\t" then both paths.
    let n = 0
    let c = 0
    while (n < names.length) {
      const kind = names[n++] ?? ""
      const letter = kind.charAt(0)
      const paired = letter === "R" || letter === "C"
      const previous = paired ? names[n++] : undefined
      const filename = names[n++] ?? ""
      const [added = "0", deleted = "0"] = (counts[c++] ?? "").split("\t")
      if (paired) c += 2
      const binary = added === "-"
      const patch = patches[files.length]
      files.push({
        filename,
        status: STATUSES[letter] ?? "changed",
        additions: binary ? 0 : Number(added),
        deletions: binary ? 0 : Number(deleted),
        ...(previous === undefined ? {} : { previous_filename: previous }),
        ...(binary || patch === undefined ? {} : { patch })
      })
    }
    return files
  }

  return {
    dir,
    commit,
    setRef: async (ref, sha) => {
      await runGit(dir, ["update-ref", ref, sha])
    },
    pullFiles,
    changedPaths
  }
}

// Git plumbing on a bare repository: what the fake GitHub's Git Data and contents routes run.

/** Runs git in `cwd` with `input` (if any) on its standard input; answers its standard output as bytes. */
export const runGitBytes = (
  cwd: string,
  args: ReadonlyArray<string>,
  options: { readonly input?: string | Uint8Array; readonly env?: NodeJS.ProcessEnv } = {}
) =>
  new Promise<Buffer>((resolve, reject) => {
    const child = execFile(
      "git",
      ["-c", "init.defaultBranch=main", ...args],
      { cwd, env: options.env ?? isolatedGitEnv(), encoding: "buffer", maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error === null) resolve(stdout)
        else reject(new Error(`git ${args.join(" ")} failed in ${cwd}: ${stderr.toString().trim() || error.message}`))
      }
    )
    // A command that exits without reading its input breaks the pipe: its exit status tells what went wrong.
    child.stdin?.on("error", () => undefined)
    // Closed at once when there is nothing to give, so that no command waits on its input.
    child.stdin?.end(options.input ?? "")
  })

/** A full hexadecimal object name, the only form of object name the plumbing below takes from outside. */
export const isGitSha = (value: unknown): value is string => typeof value === "string" && /^[0-9a-f]{40}$/.test(value)

/** The type of object `sha` (`blob`, `tree`, `commit`, `tag`); undefined when the repository has no such object. */
export const gitObjectType = (dir: string, sha: string): Promise<string | undefined> =>
  isGitSha(sha)
    ? runGit(dir, ["cat-file", "-t", sha]).then(
        (type) => type.trim(),
        () => undefined
      )
    : Promise.resolve(undefined)

/**
 * The commit `ref` names, looked up as GitHub does for a `ref` parameter: a full sha, a branch, a
 * tag, a full ref name (`refs/...`) or `HEAD` (the default branch); undefined when it names none.
 */
export const gitResolveCommit = async (dir: string, ref: string): Promise<string | undefined> => {
  // Nothing git could take for an option, a revision expression or a path.
  if (ref === "" || ref.startsWith("-") || ref.includes("..") || /[\s:\\^~?*[@{]/.test(ref)) return undefined
  const candidates =
    ref === "HEAD" || ref.startsWith("refs/") || isGitSha(ref) ? [ref] : [`refs/heads/${ref}`, `refs/tags/${ref}`]
  for (const candidate of candidates) {
    const sha = await runGit(dir, ["rev-parse", "--verify", "--quiet", `${candidate}^{commit}`]).then(
      (out) => out.trim(),
      () => ""
    )
    if (sha !== "") return sha
  }
  return undefined
}

/** Whether `ref` is a full ref name git accepts (`git check-ref-format`). */
export const gitIsValidRefName = (dir: string, ref: string): Promise<boolean> =>
  ref.startsWith("-")
    ? Promise.resolve(false)
    : runGit(dir, ["check-ref-format", ref]).then(
        () => true,
        () => false
      )

/** The sha each ref of the repository points at, by full ref name (`refs/heads/main`). */
export const gitRefs = async (dir: string): Promise<Record<string, string>> => {
  const listing = await runGit(dir, ["for-each-ref", "--format=%(refname) %(objectname)"])
  return Object.fromEntries(
    listing
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => [line.slice(0, line.lastIndexOf(" ")), line.slice(line.lastIndexOf(" ") + 1)])
  )
}

export interface GitTreeEntry {
  readonly path: string
  readonly mode: string
  readonly type: string
  readonly sha: string
  /** Bytes of a blob; absent for a tree or a submodule. */
  readonly size?: number
}

/** `ls-tree -l -z` lines as entries. */
const treeEntries = (listing: string): ReadonlyArray<GitTreeEntry> =>
  splitZ(listing).flatMap((line) => {
    const parsed = /^(\d+) (\w+) ([0-9a-f]{40}) +(-|\d+)\t(.*)$/s.exec(line)
    if (parsed === null) return []
    const [, mode = "", type = "", sha = "", size = "-", path = ""] = parsed
    return [{ path, mode, type, sha, ...(size === "-" ? {} : { size: Number(size) }) }]
  })

/** The entries of tree (or commit) `tree`, one level, as GitHub lists a tree without `recursive`. */
export const gitListTree = async (dir: string, tree: string): Promise<ReadonlyArray<GitTreeEntry>> =>
  treeEntries(await runGit(dir, ["ls-tree", "-l", "-z", tree]))

/** The entry at `path` (a file, a directory, a submodule) of commit or tree `treeish`; undefined when there is none. */
export const gitTreeEntry = async (dir: string, treeish: string, path: string): Promise<GitTreeEntry | undefined> => {
  const clean = path.replace(/^\/+|\/+$/g, "")
  if (!isGitSha(treeish) || clean === "") return undefined
  // `ls-tree` lists the entry at exactly that path, or nothing (a directory shows as itself, not its files).
  const listing = await runGit(dir, ["ls-tree", "-l", "-z", "--full-tree", treeish, "--", clean]).then(
    (out) => out,
    () => ""
  )
  return treeEntries(listing).find((candidate) => candidate.path === clean)
}

/** The file at `path` in commit `commit`, with its bytes; undefined when the path is missing or is a directory. */
export const gitReadBlob = async (
  dir: string,
  commit: string,
  path: string
): Promise<(GitTreeEntry & { readonly content: Buffer }) | undefined> => {
  const entry = await gitTreeEntry(dir, commit, path)
  if (entry?.type !== "blob") return undefined
  return { ...entry, content: await runGitBytes(dir, ["cat-file", "blob", entry.sha]) }
}

/** A change of a tree: a file's content, an existing blob (`sha`), or a file's removal (`sha: null`). */
export type GitTreeChange =
  | { readonly path: string; readonly mode: string; readonly content: string }
  | { readonly path: string; readonly mode: string; readonly sha: string | null }

/**
 * Writes a tree: `baseTree` (a tree sha; the empty tree without it) with `changes` made, nested
 * paths included, through a temporary index; answers the new tree's sha. A file replaces a
 * directory at its path and the other way round, as in a commit.
 */
export const gitWriteTree = async (
  dir: string,
  baseTree: string | undefined,
  changes: ReadonlyArray<GitTreeChange>
): Promise<string> => {
  const lines = await Promise.all(
    changes.map(async (change) => {
      const sha =
        "content" in change
          ? (await runGitBytes(dir, ["hash-object", "-w", "--stdin"], { input: change.content })).toString().trim()
          : change.sha
      // Mode 0 takes the path out of the index.
      return sha === null ? `0 ${"0".repeat(40)}\t${change.path}` : `${change.mode} ${sha}\t${change.path}`
    })
  )
  const scratch = await mkdtemp(join(tmpdir(), "bosun-git-index-"))
  const env = { ...isolatedGitEnv(), GIT_INDEX_FILE: join(scratch, "index") }
  const write = async () => {
    await runGitBytes(dir, baseTree === undefined ? ["read-tree", "--empty"] : ["read-tree", baseTree], { env })
    if (lines.length > 0) {
      await runGitBytes(dir, ["update-index", "-z", "--index-info"], { input: `${lines.join("\0")}\0`, env })
    }
    return (await runGitBytes(dir, ["write-tree"], { env })).toString().trim()
  }
  return write().finally(() => rm(scratch, { recursive: true, force: true }))
}

export interface GitIdentity {
  readonly name: string
  readonly email: string
  /** ISO 8601, in UTC. */
  readonly date: string
}

export interface GitCommit {
  readonly sha: string
  readonly tree: string
  readonly parents: ReadonlyArray<string>
  readonly author: GitIdentity
  readonly committer: GitIdentity
  readonly message: string
}

/** `Name <email> 1700000000 +0000` as an identity. */
const identityOf = (line: string): GitIdentity => {
  const parsed = /^(.*) <(.*)> (\d+) [+-]\d{4}$/.exec(line)
  return {
    name: parsed?.[1] ?? "",
    email: parsed?.[2] ?? "",
    date: new Date(Number(parsed?.[3] ?? 0) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z")
  }
}

/** Commit `sha` as git stores it; undefined when `sha` is not a commit of the repository. */
export const gitReadCommit = async (dir: string, sha: string): Promise<GitCommit | undefined> => {
  if ((await gitObjectType(dir, sha)) !== "commit") return undefined
  const raw = await runGit(dir, ["cat-file", "commit", sha])
  const split = raw.indexOf("\n\n")
  const headers = (split < 0 ? raw : raw.slice(0, split)).split("\n")
  const field = (name: string) =>
    headers.filter((line) => line.startsWith(`${name} `)).map((line) => line.slice(name.length + 1))
  return {
    sha,
    tree: field("tree")[0] ?? "",
    parents: field("parent"),
    author: identityOf(field("author")[0] ?? ""),
    committer: identityOf(field("committer")[0] ?? ""),
    message: split < 0 ? "" : raw.slice(split + 2)
  }
}

/** Writes a commit of `tree` on `parents` with `message` kept byte for byte; answers its sha. */
export const gitCommitTree = async (
  dir: string,
  commit: {
    readonly tree: string
    readonly parents: ReadonlyArray<string>
    readonly message: string
    readonly author: Omit<GitIdentity, "date"> & { readonly date?: string }
    readonly committer: Omit<GitIdentity, "date"> & { readonly date?: string }
  }
): Promise<string> => {
  const { author, committer } = commit
  const env: NodeJS.ProcessEnv = {
    ...isolatedGitEnv(),
    GIT_AUTHOR_NAME: author.name,
    GIT_AUTHOR_EMAIL: author.email,
    GIT_COMMITTER_NAME: committer.name,
    GIT_COMMITTER_EMAIL: committer.email,
    ...(author.date === undefined ? {} : { GIT_AUTHOR_DATE: author.date }),
    ...(committer.date === undefined ? {} : { GIT_COMMITTER_DATE: committer.date })
  }
  // The message goes through standard input: `-m` would add a newline to it.
  const args = ["commit-tree", commit.tree, ...commit.parents.flatMap((parent) => ["-p", parent])]
  return (await runGitBytes(dir, args, { input: commit.message, env })).toString().trim()
}

/**
 * Points `ref` at `sha`; with `expected`, only while the ref still points there (the empty string:
 * only while it does not exist). Answers whether the ref was moved.
 */
export const gitUpdateRef = (dir: string, ref: string, sha: string, expected?: string): Promise<boolean> =>
  runGit(dir, ["update-ref", ref, sha, ...(expected === undefined ? [] : [expected])]).then(
    () => true,
    () => false
  )

/** Takes `ref` out of the repository; answers whether it was there. */
export const gitDeleteRef = (dir: string, ref: string): Promise<boolean> =>
  runGit(dir, ["update-ref", "-d", ref]).then(
    () => true,
    () => false
  )

/** Whether commit `ancestor` is `descendant` or one of its ancestors (moving a ref from one to the other is a fast-forward). */
export const gitIsAncestor = (dir: string, ancestor: string, descendant: string): Promise<boolean> =>
  runGit(dir, ["merge-base", "--is-ancestor", ancestor, descendant]).then(
    () => true,
    () => false
  )

/** How many commits `head` has that `base` does not (`git rev-list --count base..head`). */
export const gitCommitsAhead = async (dir: string, base: string, head: string): Promise<number> =>
  Number((await runGit(dir, ["rev-list", "--count", `${base}..${head}`])).trim())
