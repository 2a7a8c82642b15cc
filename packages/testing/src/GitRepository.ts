/**
 * Real git repositories for tests (test code only): a bare repository the fake GitHub serves over
 * smart HTTP, authored through a working clone beside it, and GitHub's view of a pull request's
 * changes (`pulls/:n/files`) computed by git itself, so fixtures cannot drift from the commits.
 * Every git call is isolated from the machine's and the user's git configuration.
 */
import { execFile } from "node:child_process"
import { mkdir, rm, writeFile } from "node:fs/promises"
import { dirname, join } from "node:path"
import type { FakeGithubPullFile } from "./FakeGithub.ts"

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
