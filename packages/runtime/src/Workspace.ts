/**
 * An attempt's workspace (issue 6: "a fresh directory per attempt, checked out with git"): each
 * repository of the run request cloned under its `path` at `ref` — a branch, `refs/heads/...`,
 * a tag, or any other ref such as a pull request's `refs/pull/N/head` — and `sha`, when pinned; and,
 * once the agent is done, the changes it made as one unified diff against what was checked out.
 *
 * A `read_only` repository (context the agent reads, such as an approved secondary repository)
 * has every file's write permission removed after the checkout — directories stay writable, so the
 * workspace is removed as usual — and is left out of the changes.
 *
 * Credentials: an INLINE token reaches git as an `Authorization` header for that one command
 * (`-c http.extraHeader`), never in the URL, the remote's configuration or a file; an INJECTED
 * placeholder goes the same way and the egress proxy swaps it for the real token.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { RunRepository } from "@bosun/domain"
import { Data, Effect } from "effect"

export class WorkspaceError extends Data.TaggedError("WorkspaceError")<{
  readonly message: string
}> {}

/** Runs git with `args` in `cwd`; the error names the command and quotes git's last stderr line. */
export const git = (cwd: string, args: ReadonlyArray<string>, options: { readonly secretArgs?: number } = {}) =>
  Effect.callback<string, WorkspaceError>((resume) => {
    const child = execFile(
      "git",
      [...args],
      { cwd, maxBuffer: 256 * 1024 * 1024, env: { ...process.env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" } },
      (error, stdout, stderr) => {
        if (error === null) return resume(Effect.succeed(stdout))
        // Arguments carrying a credential (the `-c http.extraHeader=...` pair) are not quoted.
        const shown = args.slice(options.secretArgs ?? 0).join(" ")
        const last = stderr.trim().split("\n").pop() ?? error.message
        resume(Effect.fail(new WorkspaceError({ message: `git ${shown}: ${last}` })))
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const authArgs = (credential: string | null): Array<string> =>
  credential === null
    ? []
    : ["-c", `http.extraHeader=Authorization: Basic ${Buffer.from(`x-access-token:${credential}`).toString("base64")}`]

export interface CheckedOut {
  readonly repository: RunRepository
  readonly dir: string
  /** The commit the agent started from. */
  readonly base: string
}

/** Removes the write permission of every file under `dir` but its `.git`. */
const makeFilesReadOnly = async (dir: string): Promise<void> => {
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const at = path.join(dir, entry.name)
    if (entry.isDirectory()) {
      if (entry.name !== ".git") await makeFilesReadOnly(at)
    } else if (entry.isFile()) {
      const { mode } = await fs.stat(at)
      await fs.chmod(at, mode & ~0o222)
    }
  }
}

/** Clones every repository into `root/<path>` and returns where each started. */
export const checkout = Effect.fn("Workspace.checkout")(function* (
  root: string,
  repositories: ReadonlyArray<RunRepository>
) {
  yield* Effect.promise(() => fs.mkdir(root, { recursive: true }))
  const checkedOut: Array<CheckedOut> = []
  for (const repository of repositories) {
    const dir = path.join(root, repository.path)
    const auth = authArgs(repository.credential)
    if (repository.ref.startsWith("refs/") && !repository.ref.startsWith("refs/heads/")) {
      // `clone --branch` takes only a branch or tag name, and a clone fetches only those: a
      // pull request's `refs/pull/N/head` is fetched on its own and checked out detached.
      yield* git(root, [...auth, "clone", "--quiet", "--no-checkout", "--", repository.url, dir], {
        secretArgs: auth.length
      })
      yield* git(dir, [...auth, "fetch", "--quiet", "origin", repository.ref], { secretArgs: auth.length })
      yield* git(dir, ["checkout", "--quiet", "--detach", repository.sha ?? "FETCH_HEAD"])
    } else {
      const branch = repository.ref.replace(/^refs\/heads\//, "")
      yield* git(root, [...auth, "clone", "--quiet", "--branch", branch, "--", repository.url, dir], {
        secretArgs: auth.length
      })
      if (repository.sha !== undefined) yield* git(dir, ["checkout", "--quiet", "--detach", repository.sha])
    }
    // The agent may commit; its identity is the runtime's, not whoever owns the machine's git config.
    yield* git(dir, ["config", "user.name", "Bosun agent"])
    yield* git(dir, ["config", "user.email", "agent@bosun.invalid"])
    const base = (yield* git(dir, ["rev-parse", "HEAD"])).trim()
    if (repository.read_only === true) yield* Effect.promise(() => makeFilesReadOnly(dir))
    checkedOut.push({ repository, dir, base })
  }
  return checkedOut
})

/**
 * Everything the agent changed, committed or not, new files included, as one diff whose paths
 * are prefixed with each repository's `path`.
 */
export const changes = Effect.fn("Workspace.changes")(function* (checkedOut: ReadonlyArray<CheckedOut>) {
  const parts: Array<string> = []
  for (const { repository, dir, base } of checkedOut) {
    if (repository.read_only === true) continue
    yield* git(dir, ["add", "--all"])
    parts.push(
      yield* git(dir, [
        "diff",
        "--cached",
        "--binary",
        "--no-color",
        `--src-prefix=a/${repository.path}/`,
        `--dst-prefix=b/${repository.path}/`,
        base
      ])
    )
  }
  return parts.join("")
})
