/**
 * An attempt's workspace (a fresh directory per attempt, checked out with git): each
 * repository of the run request cloned under its `path` at `ref` — a branch, `refs/heads/...`,
 * a tag, or any other ref such as a pull request's `refs/pull/N/head` — and `sha`, when pinned; and,
 * once the agent is done, the changes it made as one unified diff against what was checked out.
 *
 * A `read_only` repository (context the agent reads, such as an approved secondary repository)
 * has every file's write permission removed after the checkout — directories stay writable, so the
 * workspace is removed as usual — and is left out of the changes.
 *
 * Credentials: an INLINE token reaches git as an `Authorization` header for that one command,
 * passed in its environment (`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_0`/`GIT_CONFIG_VALUE_0`) — never in
 * its arguments, which any local user can read in `/proc/<pid>/cmdline`, nor in the URL, the
 * remote's configuration or a file; an INJECTED placeholder goes the same way and the egress proxy
 * swaps it for the real token.
 *
 * Who runs git (docs/agent-isolation.md): the checkout is the runtime's own work, before any agent
 * code exists, and runs as the runtime; with agents under users of their own, the runtime then
 * hands the checkout to the attempt's user. Once the agent has run, the repositories are its: a
 * `.git/config` it wrote can name programs (`core.fsmonitor`, filters, diff drivers) that git
 * runs. So collecting the changes runs git as the attempt's user, with an environment of its own
 * (none of the runtime's variables), never as the runtime.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { RunRepository } from "@bosun/domain"
import { Data, Effect } from "effect"
import type { AgentUser } from "./AgentUsers.ts"

export class WorkspaceError extends Data.TaggedError("WorkspaceError")<{
  readonly message: string
}> {}

/** How one git command runs: as the runtime (default), or as an attempt's user with its own HOME. */
export interface GitOptions {
  /** A credential for this command only (an `Authorization` header, through the environment). */
  readonly credential?: string | null
  /** Run as this user, with an environment of its own whose HOME is `home`. */
  readonly as?: { readonly user: AgentUser | undefined; readonly home: string }
}

const authEnv = (credential: string | null | undefined): Record<string, string> =>
  credential === null || credential === undefined
    ? {}
    : {
        GIT_CONFIG_COUNT: "1",
        GIT_CONFIG_KEY_0: "http.extraHeader",
        GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`x-access-token:${credential}`).toString("base64")}`
      }

/** Runs git with `args` in `cwd`; the error names the command and quotes git's last stderr line. */
export const git = (cwd: string, args: ReadonlyArray<string>, options: GitOptions = {}) =>
  Effect.callback<string, WorkspaceError>((resume) => {
    const base =
      options.as === undefined
        ? { ...process.env }
        : {
            PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
            HOME: options.as.home,
            XDG_CONFIG_HOME: `${options.as.home}/.config`
          }
    const child = execFile(
      "git",
      [...args],
      {
        cwd,
        maxBuffer: 256 * 1024 * 1024,
        env: { ...base, ...authEnv(options.credential), GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" },
        ...(options.as?.user === undefined ? {} : { uid: options.as.user.uid, gid: options.as.user.gid })
      },
      (error, stdout, stderr) => {
        if (error === null) return resume(Effect.succeed(stdout))
        const last = stderr.trim().split("\n").pop() ?? error.message
        resume(Effect.fail(new WorkspaceError({ message: `git ${args.join(" ")}: ${last}` })))
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

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
    const auth = { credential: repository.credential }
    if (repository.ref.startsWith("refs/") && !repository.ref.startsWith("refs/heads/")) {
      // `clone --branch` takes only a branch or tag name, and a clone fetches only those: a
      // pull request's `refs/pull/N/head` is fetched on its own and checked out detached.
      yield* git(root, ["clone", "--quiet", "--no-checkout", "--", repository.url, dir], auth)
      yield* git(dir, ["fetch", "--quiet", "origin", repository.ref], auth)
      yield* git(dir, ["checkout", "--quiet", "--detach", repository.sha ?? "FETCH_HEAD"])
    } else {
      const branch = repository.ref.replace(/^refs\/heads\//, "")
      yield* git(root, ["clone", "--quiet", "--branch", branch, "--", repository.url, dir], auth)
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
 * are prefixed with each repository's `path`. Git runs as the attempt's user (`as`), in the
 * repositories the agent had in its hands; external diff drivers and text conversions are off.
 */
export const changes = Effect.fn("Workspace.changes")(function* (
  checkedOut: ReadonlyArray<CheckedOut>,
  as: { readonly user: AgentUser | undefined; readonly home: string }
) {
  const parts: Array<string> = []
  for (const { repository, dir, base } of checkedOut) {
    if (repository.read_only === true) continue
    yield* git(dir, ["add", "--all"], { as })
    parts.push(
      yield* git(
        dir,
        [
          "diff",
          "--cached",
          "--binary",
          "--no-color",
          "--no-ext-diff",
          "--no-textconv",
          `--src-prefix=a/${repository.path}/`,
          `--dst-prefix=b/${repository.path}/`,
          base
        ],
        { as }
      )
    )
  }
  return parts.join("")
})
