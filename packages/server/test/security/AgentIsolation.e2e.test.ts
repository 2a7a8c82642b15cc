/**
 * An agent cannot take the instance (docs/agent-isolation.md). The real server on its embedded
 * defaults (`npm start`: embedded Postgres, `secrets.json`, file blob store, the embedded runtime
 * it launches), as root, with a probe agent registered as the custom review profile: a shell
 * script that tries every read and write the security review found open — `secrets.json` by
 * absolute and relative path, `/proc/<pid>/environ` of the server, the runtime and Postgres, the
 * Postgres data directory and socket, the blob store, the runtime's state, another concurrent
 * run's workspace, writing into the data directory — and reports each outcome as an event. Every
 * one must be denied, while the probe's positive controls (its own workspace, a world-readable
 * file) work, so a denial is the OS saying no and not a broken script.
 *
 * The runs are started through the embedded runtime's own protocol with the token the server gave
 * it (read, as root, from the runtime's environment): a full review through fake GitHub would
 * run the same agent in the same process layout, with much more around it. The server-side
 * checks are on the real files of this real embedded start: the data directory's modes and owners
 * and that Postgres listens on its socket only, with no TCP listener at all.
 */

import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { freePort } from "@bosun/platform/EmbeddedPostgres"
import { eventually } from "@bosun/testing"
import { makeFixtures, runRequest } from "@bosun/testing/RuntimeProcess"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { spawnServer, untilReady } from "../support/Process.ts"

const isRoot = process.getuid?.() === 0

/** Every check the probe makes that must be denied, by the name it reports. */
const DENIED = [
  "secrets-absolute",
  "secrets-relative",
  "server-environ",
  "runtime-environ",
  "postgres-environ",
  "runtime-fds",
  "data-dir-list",
  "pg-data-list",
  "pg-data-read",
  "pg-hba-read",
  "pg-socket-connect",
  "blobs-list",
  "runtime-dir-list",
  "runtime-state-list",
  "runtime-log-read",
  "workspaces-list",
  "other-workspace-list",
  "other-checkout-read",
  "other-home-list",
  "data-dir-write",
  "pg-dir-write",
  "blobs-write"
]

/** What the probe must be able to do: its own workspace, and what every user may read. */
const ALLOWED = ["own-checkout-read", "own-home-write", "world-readable-read"]

const PROBE = `
# KEY=VALUE lines on stdin (the run's prompt) name what to try.
while IFS= read -r line; do case "$line" in *=*) export "$line" ;; esac; done
report() { if [ "$2" -eq 0 ]; then o=read; else o=denied; fi; printf '{"type":"probe","check":"%s","outcome":"%s"}\\n' "$1" "$o"; }
try() { name=$1; shift; "$@" >/dev/null 2>&1; report "$name" $?; }
printf '{"type":"identity","uid":%s,"name":"%s","groups":"%s","env":"%s"}\\n' "$(id -u)" "$(id -un)" "$(id -G)" "$(env | cut -d= -f1 | tr '\\n' ' ')"
try secrets-absolute cat "$DATA/secrets.json"
try secrets-relative cat "$(realpath -m --relative-to="$PWD" "$DATA/secrets.json")"
try server-environ cat "/proc/$SERVER_PID/environ"
try runtime-environ cat "/proc/$RUNTIME_PID/environ"
try postgres-environ cat "/proc/$PG_PID/environ"
try runtime-fds ls "/proc/$RUNTIME_PID/fd"
try data-dir-list ls "$DATA"
try pg-data-list ls "$DATA/pg"
try pg-data-read cat "$DATA/pg/PG_VERSION"
try pg-hba-read cat "$DATA/pg/pg_hba.conf"
try pg-socket-connect node -e 'require("net").connect(process.argv[1]).on("connect", () => process.exit(0)).on("error", () => process.exit(1))' "$PG_SOCKET"
try blobs-list ls "$DATA/blobs"
try runtime-dir-list ls "$DATA/runtime"
try runtime-state-list ls "$DATA/runtime/runs"
try runtime-log-read cat "$DATA/runtime/runs/$OTHER_ATTEMPT/events.ndjson"
try workspaces-list ls "$WORKSPACES"
try other-workspace-list ls "$OTHER_WORKSPACE"
try other-checkout-read cat "$OTHER_WORKSPACE/repos/app/victim-secret.txt"
try other-home-list ls "$OTHER_WORKSPACE/home"
try data-dir-write touch "$DATA/probe-was-here"
try pg-dir-write touch "$DATA/pg/probe-was-here"
try blobs-write touch "$DATA/blobs/probe-was-here"
try own-checkout-read cat app/README.md
try own-home-write touch "$HOME/probe-was-here"
try world-readable-read cat /etc/passwd
`

/** The victim: leaves a secret in its checkout, says who it is, and waits to be cancelled. */
const VICTIM = `
echo "the victim's secret" > app/victim-secret.txt
printf '{"type":"identity","uid":%s}\\n' "$(id -u)"
exec sleep 120
`

interface AgentEvent {
  readonly type: string
  readonly [key: string]: unknown
}

/** The `agent.event`s of an attempt, from the runtime's own log (the test is root). */
const agentEvents = (dataDir: string, attemptId: string): Array<AgentEvent> => {
  const file = path.join(dataDir, "runtime", "runs", attemptId, "events.ndjson")
  if (!fs.existsSync(file)) return []
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { type: string; data: AgentEvent })
    .filter((event) => event.type === "agent.event")
    .map((event) => event.data)
}

/** The embedded runtime's pid: the server's child running the runtime's main. */
const runtimePid = (serverPid: number): number => {
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
    if (ppid !== serverPid) continue
    if (fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").includes("runtime/src/main.ts")) return Number(entry)
  }
  throw new Error(`no embedded runtime under the server ${serverPid}`)
}

const environOf = (pid: number): Record<string, string> =>
  Object.fromEntries(
    fs
      .readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .filter((entry) => entry.includes("="))
      .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)])
  )

/** The inodes of the TCP sockets in LISTEN state (`0A`) on this machine. */
const tcpListeners = (): Set<string> => {
  const inodes = new Set<string>()
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    if (!fs.existsSync(table)) continue
    for (const line of fs.readFileSync(table, "utf8").split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/)
      if (fields[3] === "0A" && fields[9] !== undefined) inodes.add(fields[9])
    }
  }
  return inodes
}

/** The socket inodes process `pid` holds open. */
const socketsOf = (pid: number): Array<string> =>
  fs.readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
    const target = (() => {
      try {
        return fs.readlinkSync(`/proc/${pid}/fd/${fd}`)
      } catch {
        return ""
      }
    })()
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1]
    return inode === undefined ? [] : [inode]
  })

const modeOf = (file: string) => fs.statSync(file).mode & 0o7777

describe("agent isolation on the embedded defaults", () => {
  it.live.skipIf(!isRoot)(
    "a probe agent reads none of the server's, the runtime's, Postgres's or another run's files, processes and credentials",
    () =>
      Effect.gen(function* () {
        const fixtures = makeFixtures()
        const dataDir = fs.mkdtempSync(path.join(fixtures.root, "data-"))
        const workspacesDir = `${dataDir}-workspaces`
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(fixtures.root, { recursive: true, force: true })))
        const probe = fixtures.script("probe.sh", PROBE)
        const victim = fixtures.script("victim.sh", VICTIM)

        const port = yield* freePort
        const server = yield* spawnServer({
          BOSUN_DATA_DIR: dataDir,
          BOSUN_PORT: String(port),
          BOSUN_RUNTIME_AGENTS: JSON.stringify({ probe: { command: [probe] }, victim: { command: [victim] } }),
          BOSUN_REVIEW_AGENT_PROFILE: "probe"
        })
        yield* untilReady(server, port, Duration.seconds(60))

        // The processes and where the runtime answers, as the server started them.
        const serverPid = server.child.pid ?? 0
        const runtime = runtimePid(serverPid)
        const token = environOf(runtime).BOSUN_RUNTIME_TOKEN ?? ""
        assert.isAbove(token.length, 16)
        const listening = server
          .stdout()
          .split("\n")
          .find((line) => line.includes('"msg":"bosun_listening"'))
        const runtimeUrl = String(JSON.parse(listening ?? "{}").runtime_url)
        const postmaster = fs.readFileSync(path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")
        const pgPid = Number(postmaster[0])
        const pgSocket = path.join(dataDir, "pg", `.s.PGSQL.${postmaster[3]}`)

        // The data directory: the server's alone; Postgres's user passes through to its own.
        const postgresUid = Number(execFileSync("id", ["-u", "postgres"]).toString())
        const postgresGid = Number(execFileSync("id", ["-g", "postgres"]).toString())
        assert.strictEqual(modeOf(dataDir), 0o710, "BOSUN_DATA_DIR: search for the postgres group only")
        assert.strictEqual(fs.statSync(dataDir).gid, postgresGid)
        assert.strictEqual(modeOf(path.join(dataDir, "secrets.json")), 0o600)
        assert.strictEqual(modeOf(path.join(dataDir, "pg")), 0o700)
        assert.strictEqual(fs.statSync(path.join(dataDir, "pg")).uid, postgresUid)
        assert.strictEqual(modeOf(path.join(dataDir, "blobs")), 0o700)
        assert.strictEqual(modeOf(path.join(dataDir, "runtime")), 0o700)
        assert.strictEqual(modeOf(path.join(dataDir, "runtime", "runs")), 0o700)
        assert.strictEqual(modeOf(workspacesDir), 0o711, "the workspaces: search only")

        // Postgres: on its socket inside its own data directory, and on no TCP port at all.
        assert.strictEqual(postmaster[4]?.trim(), path.join(dataDir, "pg"), "the socket directory")
        assert.strictEqual(postmaster[5]?.trim(), "", "no listen address")
        assert.isTrue(fs.statSync(pgSocket).isSocket())
        assert.strictEqual(modeOf(pgSocket) & 0o777, 0o700)
        const listeners = tcpListeners()
        assert.deepStrictEqual(
          socketsOf(pgPid).filter((inode) => listeners.has(inode)),
          [],
          "the embedded Postgres listens on no TCP port"
        )

        const headers = {
          authorization: `Bearer ${token}`,
          "x-bosun-protocol": "1.0",
          "content-type": "application/json"
        }
        const post = (body: Record<string, unknown>) =>
          Effect.promise(() =>
            fetch(`${runtimeUrl}/v1/runs`, { method: "POST", headers, body: JSON.stringify(body) }).then(
              (r) => r.status
            )
          )
        const state = (attemptId: string) =>
          Effect.promise(() =>
            fetch(`${runtimeUrl}/v1/runs/${encodeURIComponent(attemptId)}/result`, { headers }).then(
              (r) => r.json() as Promise<{ status: string; error: unknown }>
            )
          )

        // A concurrent run of someone else, whose checkout holds a secret.
        const other = { run_id: "victim-run", attempt_id: "victim-run:1" }
        assert.strictEqual(
          yield* post(runRequest(fixtures, { ...other, agent: { kind: "CUSTOM", profile: "victim" } })),
          201
        )
        const victimIdentity = yield* eventually(
          Effect.sync(() => agentEvents(dataDir, other.attempt_id).find((event) => event.type === "identity")),
          (event) => event !== undefined,
          Duration.seconds(30)
        ).pipe(Effect.orDie)

        const mine = { run_id: "probe-run", attempt_id: "probe-run:1" }
        const otherWorkspace = path.join(workspacesDir, other.attempt_id)
        const prompt = [
          `DATA=${dataDir}`,
          `SERVER_PID=${serverPid}`,
          `RUNTIME_PID=${runtime}`,
          `PG_PID=${pgPid}`,
          `PG_SOCKET=${pgSocket}`,
          `WORKSPACES=${workspacesDir}`,
          `OTHER_WORKSPACE=${otherWorkspace}`,
          `OTHER_ATTEMPT=${other.attempt_id}`,
          ""
        ].join("\n")
        assert.strictEqual(
          yield* post(runRequest(fixtures, { ...mine, agent: { kind: "CUSTOM", profile: "probe" }, prompt })),
          201
        )
        const finished = yield* eventually(
          state(mine.attempt_id),
          (s) => s.status !== "RUNNING",
          Duration.seconds(60)
        ).pipe(Effect.orDie)
        assert.strictEqual(finished.status, "SUCCEEDED", JSON.stringify(finished))

        const events = agentEvents(dataDir, mine.attempt_id)
        const outcomes = Object.fromEntries(
          events.filter((event) => event.type === "probe").map((event) => [String(event.check), event.outcome])
        )
        assert.deepStrictEqual(Object.keys(outcomes).sort(), [...DENIED, ...ALLOWED].sort(), "every check ran")
        for (const check of ALLOWED) assert.strictEqual(outcomes[check], "read", `control: ${check}`)
        const breaches = DENIED.filter((check) => outcomes[check] !== "denied")
        assert.deepStrictEqual(breaches, [], "the probe agent got through")

        // Who it ran as: a user of its own, neither root, nor Postgres's, nor the other run's.
        const identity = events.find((event) => event.type === "identity")
        assert.isDefined(identity)
        for (const uid of [0, postgresUid, Number(victimIdentity?.uid)]) assert.notStrictEqual(identity?.uid, uid)
        assert.notInclude(String(identity?.groups).split(" "), "0")
        // Its environment is its own: none of the server's or the runtime's settings.
        const names = String(identity?.env).trim().split(" ")
        for (const name of names) {
          assert.notMatch(
            name,
            /^(BOSUN_RUNTIME_|DATABASE_URL|BOSUN_MASTER_KEY|BOSUN_BOOTSTRAP|BOSUN_DATA_DIR|BOSUN_PORT)/
          )
        }
        for (const file of ["probe-was-here"]) {
          assert.isFalse(fs.existsSync(path.join(dataDir, file)))
          assert.isFalse(fs.existsSync(path.join(dataDir, "pg", file)))
          assert.isFalse(fs.existsSync(path.join(dataDir, "blobs", file)))
        }
        // The probe's workspace went back to the runtime, and its user is gone.
        const probeWorkspace = path.join(workspacesDir, mine.attempt_id)
        assert.strictEqual(fs.statSync(probeWorkspace).uid, 0)
        assert.strictEqual(modeOf(probeWorkspace), 0o700)
        const users = fs
          .readFileSync("/etc/passwd", "utf8")
          .split("\n")
          .map((line) => line.split(":")[0])
        assert.match(String(identity?.name), /^bosun-run-[0-9a-f]{10}$/)
        assert.notInclude(users, identity?.name, "the probe's user was deleted")

        yield* Effect.promise(() =>
          fetch(`${runtimeUrl}/v1/runs/${encodeURIComponent(other.attempt_id)}`, { method: "DELETE", headers })
        )
        server.child.kill("SIGTERM")
        assert.strictEqual(yield* server.exited, 0)
        fs.rmSync(workspacesDir, { recursive: true, force: true })
      }),
    180_000
  )
})
