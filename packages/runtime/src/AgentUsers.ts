/**
 * Who an agent runs as (docs/agent-isolation.md). An agent is code the runtime does not trust:
 * the model drives it, and a custom profile is whatever command a team registered. It must not
 * reach the runtime's state or token, the control plane's data directory, or another run's
 * workspace.
 *
 * - **As root**, every attempt gets an OS user of its own, created for it and deleted after it:
 *   `bosun-run-<10 hex>`, a system user with its own group (`useradd --system --user-group`), a
 *   locked password, no home of its own (`/nonexistent`; HOME is the attempt's `home/`), and the comment
 *   `bosun-runtime pid=<runtime pid>`. The agent CLI runs with that uid and gid (and no
 *   supplementary groups: Node's `spawn` drops them), so it cannot read what is the runtime's or
 *   the server's (0700/0600, owned by them), nor `/proc/<pid>/environ` of their processes (Linux
 *   allows that only to the same uid), nor another run's workspace (0700, owned by that run's
 *   user). A user per attempt, rather than one shared agent user or a fixed pool: concurrent
 *   runs — of one runtime or of several on one machine — never share a uid, and no user is
 *   reused while anything of an earlier run could still be its. Measured on a 2-core VM: creating
 *   a user takes ~85 ms and deleting one ~120 ms, next to agent runs of seconds to minutes.
 * - When the attempt ends, `release` ends every process of that uid (`kill -KILL -1` as the uid
 *   itself: one atomic sweep a fork cannot escape, then a check of `/proc`), removes what the uid
 *   left in the shared temporary directories (`/tmp`, `/var/tmp`, `/dev/shm`), and deletes the
 *   user and its group: a later user that gets the same uid inherits nothing.
 * - A runtime killed outright leaves its users behind: the next runtime to start on the machine
 *   releases every `bosun-run-*` user whose runtime (by the pid in its comment) is gone, and the
 *   runtime releases the users recorded by the runs of its own data directory.
 * - **Not root**, the runtime cannot switch users: agents run as the runtime's own user and can
 *   read everything it can. It says so once at start (`bosun_runtime_agents_not_isolated`, a
 *   warning); isolation then comes from running agents in a sandbox provider (PLATFORM_CONTAINER,
 *   HOSTED_SANDBOX), one container or VM per run.
 *
 * As root without `useradd`/`userdel` (a minimal image), the runtime does not start: running
 * agents as root would be the opposite of what it promises.
 */
import { execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Context, Data, Duration, Effect, Layer, Semaphore } from "effect"

export class AgentUserError extends Data.TaggedError("AgentUserError")<{ readonly message: string }> {}

/** The OS identity an agent process runs as. */
export interface AgentUser {
  readonly name: string
  readonly uid: number
  readonly gid: number
}

export const USER_PREFIX = "bosun-run-"
const COMMENT_PREFIX = "bosun-runtime pid="

/** The shared, world-writable temporary directories an agent can leave files in. */
const SHARED_TEMPORARY = ["/tmp", "/var/tmp", "/dev/shm"]

const SBIN = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]

/** `useradd` & co. by absolute path: root's PATH may lack the sbin directories. */
const findTool = (name: string): string | undefined =>
  [...(process.env.PATH ?? "").split(path.delimiter), ...SBIN]
    .filter((dir) => dir !== "")
    .map((dir) => path.join(dir, name))
    .find((file) => {
      const stat = fs.statSync(file, { throwIfNoEntry: false })
      return stat?.isFile() === true && (stat.mode & 0o111) !== 0
    })

interface ExecResult {
  readonly code: number
  readonly stderr: string
}

const run = (file: string, args: ReadonlyArray<string>) =>
  Effect.callback<ExecResult>((resume) => {
    const child = execFile(
      file,
      [...args],
      { env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" } },
      (error, _stdout, stderr) =>
        resume(
          Effect.succeed({
            code: error === null ? 0 : typeof error.code === "number" ? error.code : 1,
            stderr: String(stderr).trim()
          })
        )
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** useradd/userdel/groupdel exit 10 when another process holds the passwd/group lock: try again. */
const LOCKED = 10

const retryingLock = (file: string, args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    for (let attempt = 0; ; attempt++) {
      const result = yield* run(file, args)
      if (result.code !== LOCKED || attempt >= 50) return result
      yield* Effect.sleep(Duration.millis(20 + Math.floor(Math.random() * 80)))
    }
  })

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** SIGKILL to `pid`; one that has exited meanwhile is what was wanted. */
const killQuietly = (pid: number) => {
  try {
    process.kill(pid, "SIGKILL")
  } catch {
    // Already gone.
  }
}

/** The pids whose real uid is `uid`, from `/proc`. */
const processesOf = (uid: number): Array<number> => {
  const pids: Array<number> = []
  const entries = (() => {
    try {
      return fs.readdirSync("/proc")
    } catch {
      return []
    }
  })()
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    const status = (() => {
      try {
        return fs.readFileSync(`/proc/${entry}/status`, "utf8")
      } catch {
        return ""
      }
    })()
    const uids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status)
    if (uids !== null && [uids[1], uids[2], uids[3]].includes(String(uid))) pids.push(Number(entry))
  }
  return pids
}

/** Every process of `user` ended: one `kill -KILL -1` as the user, then whatever `/proc` still shows. */
export const killProcessesOf = (user: AgentUser) =>
  Effect.gen(function* () {
    // kill(-1) signals every process the caller may signal, i.e. every process of this uid,
    // in one pass under the kernel's task-list lock: a process forking in a loop cannot outrun it.
    yield* Effect.callback<void>((resume) => {
      const child = spawn("/bin/sh", ["-c", "kill -KILL -1 2>/dev/null; exit 0"], {
        uid: user.uid,
        gid: user.gid,
        env: { PATH: "/usr/bin:/bin" },
        stdio: "ignore"
      })
      child.once("error", () => resume(Effect.void))
      child.once("close", () => resume(Effect.void))
    })
    for (let round = 0; round < 20; round++) {
      const left = processesOf(user.uid)
      if (left.length === 0) return
      for (const pid of left) killQuietly(pid)
      yield* Effect.sleep(Duration.millis(25))
    }
  })

/** Removes what `uid` owns directly in the shared temporary directories (whole trees; links are not followed). */
const removeTemporaryFilesOf = (uid: number) =>
  Effect.sync(() => {
    for (const dir of SHARED_TEMPORARY) {
      let entries: Array<string>
      try {
        entries = fs.readdirSync(dir)
      } catch {
        continue
      }
      for (const name of entries) {
        const at = path.join(dir, name)
        const stat = fs.lstatSync(at, { throwIfNoEntry: false })
        if (stat?.uid === uid) fs.rmSync(at, { recursive: true, force: true })
      }
    }
  })

/**
 * Hands `root` and everything under it to `user` (`lchown`: a link is re-owned, never what it
 * points to). Entries already the user's are skipped.
 */
export const handOver = (root: string, user: AgentUser) => {
  const walk = (at: string) => {
    const stat = fs.lstatSync(at, { throwIfNoEntry: false })
    if (stat === undefined) return
    if (stat.uid !== user.uid || stat.gid !== user.gid) fs.lchownSync(at, user.uid, user.gid)
    if (stat.isDirectory()) for (const name of fs.readdirSync(at)) walk(path.join(at, name))
  }
  walk(root)
}

interface PasswdEntry {
  readonly name: string
  readonly uid: number
  readonly gid: number
  readonly comment: string
}

const readPasswd = (): Array<PasswdEntry> =>
  fs
    .readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .map((line) => line.split(":"))
    .filter((fields) => fields.length >= 7)
    .map(([name = "", , uid = "", gid = "", comment = ""]) => ({
      name,
      uid: Number(uid),
      gid: Number(gid),
      comment
    }))

const groupExists = (name: string) =>
  fs
    .readFileSync("/etc/group", "utf8")
    .split("\n")
    .some((line) => line.split(":")[0] === name)

export interface AgentUsersShape {
  /** Whether agents run as users of their own (the runtime is root). */
  readonly isolated: boolean
  /** A new user for one attempt; undefined when not isolated. */
  readonly acquire: Effect.Effect<AgentUser | undefined, AgentUserError>
  /** Ends the user's processes, removes its temporary files, deletes it. Never fails. */
  readonly release: (user: AgentUser) => Effect.Effect<void>
}

export class AgentUsers extends Context.Service<AgentUsers, AgentUsersShape>()("bosun/runtime/AgentUsers") {
  static readonly layer = Layer.effect(
    AgentUsers,
    Effect.gen(function* () {
      if (process.getuid?.() !== 0) {
        yield* Effect.logWarning("bosun_runtime_agents_not_isolated").pipe(
          Effect.annotateLogs({
            uid: process.getuid?.() ?? null,
            limitation:
              "not running as root, so agents run as this runtime's own user and can read what it can: its state and token, other runs' workspaces, anything else of this user; run agents in a sandbox provider (PLATFORM_CONTAINER or HOSTED_SANDBOX) to isolate them (docs/agent-isolation.md)"
          })
        )
        return AgentUsers.of({
          isolated: false,
          acquire: Effect.succeed(undefined),
          release: () => Effect.void
        })
      }
      const useradd = findTool("useradd")
      const userdel = findTool("userdel")
      const groupdel = findTool("groupdel")
      if (useradd === undefined || userdel === undefined) {
        return yield* new AgentUserError({
          message:
            "running as root, agents run as users of their own, but useradd/userdel are missing: install them (Debian: passwd; Alpine: shadow) or run the runtime as a non-root user"
        })
      }
      // One passwd change at a time from this process; other processes are waited for by retrying the lock.
      const passwd = yield* Semaphore.make(1)

      const release = (user: AgentUser) =>
        Effect.gen(function* () {
          yield* killProcessesOf(user)
          yield* removeTemporaryFilesOf(user.uid)
          const removed = yield* passwd.withPermits(1)(retryingLock(userdel, [user.name]))
          // userdel removes the user's own group with it (USERGROUPS_ENAB); where it did not, do it here.
          if (groupdel !== undefined && removed.code === 0 && groupExists(user.name)) {
            yield* passwd.withPermits(1)(retryingLock(groupdel, [user.name]))
          }
          if (removed.code !== 0 && removed.code !== 6) {
            yield* Effect.logWarning("bosun_runtime_agent_user_not_deleted").pipe(
              Effect.annotateLogs({ user: user.name, reason: removed.stderr })
            )
          }
        }).pipe(Effect.catchCause(() => Effect.void))

      const acquire = Effect.gen(function* () {
        for (let attempt = 0; attempt < 5; attempt++) {
          const name = `${USER_PREFIX}${randomBytes(5).toString("hex")}`
          const created = yield* passwd.withPermits(1)(
            retryingLock(useradd, [
              "--system",
              "--user-group",
              "--no-create-home",
              "--no-log-init",
              // Not the attempt's home: a passwd home cannot hold the ':' of attempt ids. HOME is set.
              "--home-dir",
              "/nonexistent",
              "--shell",
              "/bin/sh",
              "--comment",
              `${COMMENT_PREFIX}${process.pid}`,
              name
            ])
          )
          // 9: the name is taken (a random clash): another name.
          if (created.code === 9) continue
          if (created.code !== 0) {
            return yield* new AgentUserError({ message: `could not create the agent's user: ${created.stderr}` })
          }
          const entry = readPasswd().find((candidate) => candidate.name === name)
          if (entry === undefined) {
            return yield* new AgentUserError({ message: `useradd created ${name}, but /etc/passwd lacks it` })
          }
          return { name, uid: entry.uid, gid: entry.gid } satisfies AgentUser
        }
        return yield* new AgentUserError({ message: "could not find a free name for the agent's user" })
      })

      // Users a runtime killed outright left behind: theirs is a pid that no longer runs.
      const stale = readPasswd().filter((entry) => {
        if (!entry.name.startsWith(USER_PREFIX) || !entry.comment.startsWith(COMMENT_PREFIX)) return false
        const pid = Number(entry.comment.slice(COMMENT_PREFIX.length))
        return !Number.isInteger(pid) || pid <= 0 || !isAlive(pid)
      })
      yield* Effect.forEach(stale, release, { discard: true })
      if (stale.length > 0) {
        yield* Effect.logInfo("bosun_runtime_stale_agent_users_removed").pipe(
          Effect.annotateLogs({ users: stale.map((entry) => entry.name) })
        )
      }
      return AgentUsers.of({ isolated: true, acquire, release })
    })
  )
}
