/**
 * Who agents run as (docs/agent-isolation.md; `src/AgentUsers.ts`), on the real runtime process:
 * as root, a fresh OS user per attempt — concurrent attempts never share a uid, their workspaces
 * are theirs alone, nothing they started outlives the attempt, what they left in /tmp is removed,
 * the user is deleted, and the users of a runtime killed outright are deleted by the next one to
 * start; not root, the runtime cannot switch users and says so in one warning at start.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import {
  awaitEnd,
  call,
  freePort,
  isAlive,
  makeFixtures,
  runRequest,
  startRuntime,
  TOKEN
} from "@bosun/testing/RuntimeProcess"
import { afterAll, describe, expect, it } from "@effect/vitest"

const isRoot = process.getuid?.() === 0
const fixtures = makeFixtures()
afterAll(() => fs.rmSync(fixtures.root, { recursive: true, force: true }))

const mainScript = fileURLToPath(new URL("../src/main.ts", import.meta.url))

/** `agent.event`s of an attempt, from its log (the test reads the runtime's files as root or as their owner). */
const agentEvents = (dataDir: string, attemptId: string) => {
  const file = path.join(dataDir, "runs", attemptId, "events.ndjson")
  if (!fs.existsSync(file)) return []
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { type: string; data: Record<string, unknown> })
    .filter((event) => event.type === "agent.event")
    .map((event) => event.data)
}

const until = async (condition: () => boolean, timeoutMs = 20_000) => {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time")
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Whether a user of this name exists (names are random and never reused; uids are). */
const userExists = (name: unknown) =>
  fs
    .readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .some((line) => line.split(":")[0] === String(name))

/**
 * Leaves a secret in its checkout and a file in /tmp, starts a process in a session of its own,
 * says who it is, and once `$GO` exists tries the other attempt's checkout (named in
 * `$FIXTURES/<run id>.peer`).
 */
const HOLDER = `
echo "secret of $BOSUN_RUN_ID" > app/secret.txt
echo left > "/tmp/bosun-agent-left-$BOSUN_RUN_ID"
setsid sleep 300 < /dev/null > /dev/null 2>&1 &
printf '{"type":"identity","uid":%s,"name":"%s","escaped":%s}\\n' "$(id -u)" "$(id -un)" "$!"
while [ ! -e "$GO" ]; do sleep 0.05; done
peer=$(cat "$FIXTURES/$BOSUN_RUN_ID.peer")
if cat "$peer/app/secret.txt" > /dev/null 2>&1; then o=read; else o=denied; fi
printf '{"type":"peer","outcome":"%s"}\\n' "$o"
`

describe.skipIf(!isRoot)("as root", () => {
  it("gives each attempt a user of its own: concurrent attempts cannot read each other, and nothing of theirs outlives them", async () => {
    const dataDir = path.join(fixtures.root, "root-data")
    const go = path.join(fixtures.root, "go")
    const runtime = await startRuntime({
      BOSUN_RUNTIME_DATA_DIR: dataDir,
      BOSUN_RUNTIME_AGENTS: JSON.stringify({
        holder: { command: [fixtures.script("holder.sh", HOLDER)], env: { GO: go, FIXTURES: fixtures.root } }
      })
    })
    try {
      const attempts = ["iso-a", "iso-b"].map((id) => ({ run_id: id, attempt_id: `${id}:1` }))
      const workspaceOf = (attempt: { attempt_id: string }) => path.join(dataDir, "workspaces", attempt.attempt_id)
      for (const [index, attempt] of attempts.entries()) {
        const peer = attempts[1 - index] ?? attempt
        const started = await call(
          runtime.base,
          "POST",
          "/v1/runs",
          runRequest(fixtures, {
            ...attempt,
            agent: { kind: "CUSTOM", profile: "holder" },
            prompt: "hold",
            repositories: [{ id: "r", url: fixtures.repoUrl, ref: "main", path: "app", credential: null }]
          })
        )
        expect(started.status).toBe(201)
        // Each reads the other's checkout by its path: known to it here, as it could guess it.
        fs.writeFileSync(path.join(fixtures.root, `${attempt.run_id}.peer`), path.join(workspaceOf(peer), "repos"))
      }
      const identity = (attempt: { attempt_id: string }) =>
        agentEvents(dataDir, attempt.attempt_id).find((event) => event.type === "identity")
      await until(() => attempts.every((attempt) => identity(attempt) !== undefined))
      const [a, b] = attempts.map((attempt) => identity(attempt) ?? {})
      expect(a?.uid).not.toBe(0)
      expect(b?.uid).not.toBe(0)
      expect(a?.uid).not.toBe(b?.uid)

      for (const attempt of attempts) {
        const workspace = fs.statSync(workspaceOf(attempt))
        expect(workspace.uid).toBe(0)
        expect(workspace.mode & 0o777).toBe(0o710)
        const repos = fs.statSync(path.join(workspaceOf(attempt), "repos"))
        expect(repos.uid).toBe(identity(attempt)?.uid)
        expect(repos.mode & 0o777).toBe(0o700)
      }
      expect(fs.statSync(path.join(dataDir, "runs")).mode & 0o777).toBe(0o700)
      expect(fs.statSync(path.join(dataDir, "workspaces")).mode & 0o777).toBe(0o711)
      expect(fs.statSync(dataDir).mode & 0o777).toBe(0o711)
      expect(isAlive(Number(a?.escaped))).toBe(true)
      fs.writeFileSync(go, "")
      const ends = await Promise.all(attempts.map((attempt) => awaitEnd(runtime.base, attempt.attempt_id)))
      for (const end of ends) expect(end.status).toBe("SUCCEEDED")
      for (const attempt of attempts) {
        expect(agentEvents(dataDir, attempt.attempt_id).find((event) => event.type === "peer")?.outcome).toBe("denied")
      }
      for (const [index, attempt] of attempts.entries()) {
        const who = [a, b][index]
        // The process it started in a session of its own is gone, and so is what it left in /tmp.
        expect(isAlive(Number(who?.escaped))).toBe(false)
        expect(fs.existsSync(`/tmp/bosun-agent-left-${attempt.run_id}`)).toBe(false)
        // The workspace is the runtime's again; the user is deleted.
        const workspace = fs.statSync(workspaceOf(attempt))
        expect([workspace.uid, workspace.gid, workspace.mode & 0o777]).toEqual([0, 0, 0o700])
        expect(userExists(who?.name)).toBe(false)
      }
    } finally {
      await runtime.stop()
    }
  })

  it("deletes the users a runtime killed outright left behind, and ends their processes", async () => {
    const dataDir = path.join(fixtures.root, "killed-data")
    const settings = {
      BOSUN_RUNTIME_DATA_DIR: dataDir,
      BOSUN_RUNTIME_AGENTS: JSON.stringify({
        stayer: {
          command: [
            fixtures.script("stayer.sh", `printf '{"type":"identity","name":"%s"}\\n' "$(id -un)"\nexec sleep 300`)
          ]
        }
      })
    }
    const first = await startRuntime(settings)
    const attempt = { run_id: "killed", attempt_id: "killed:1" }
    await call(
      first.base,
      "POST",
      "/v1/runs",
      runRequest(fixtures, { ...attempt, agent: { kind: "CUSTOM", profile: "stayer" } })
    )
    await until(() => agentEvents(dataDir, attempt.attempt_id).some((event) => event.type === "identity"))
    const name = agentEvents(dataDir, attempt.attempt_id).find((event) => event.type === "identity")?.name
    await first.stop("SIGKILL")
    expect(userExists(name)).toBe(true)
    const second = await startRuntime(settings)
    try {
      expect(userExists(name)).toBe(false)
      const workspace = fs.statSync(path.join(dataDir, "workspaces", attempt.attempt_id))
      expect([workspace.uid, workspace.mode & 0o777]).toEqual([0, 0o700])
    } finally {
      await second.stop()
    }
  })
})

describe("not root", () => {
  it("says once at start that agents run as the runtime's own user, and runs them so", async () => {
    const dataDir = path.join(fixtures.root, "unprivileged-data")
    const port = await freePort()
    // As root, the runtime runs as `nobody`; otherwise as whoever runs the test.
    const child = spawn(process.execPath, [mainScript], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        BOSUN_RUNTIME_PORT: String(port),
        BOSUN_RUNTIME_TOKEN: TOKEN,
        BOSUN_RUNTIME_DATA_DIR: dataDir,
        BOSUN_RUNTIME_AGENTS: JSON.stringify({
          who: { command: [fixtures.script("who.sh", `printf '{"type":"identity","uid":%s}\\n' "$(id -u)"`)] }
        })
      },
      stdio: ["ignore", "pipe", "pipe"],
      cwd: fixtures.root,
      ...(isRoot ? { uid: 65534, gid: 65534 } : {})
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
    try {
      const base = `http://127.0.0.1:${port}`
      await until(() => output.includes("bosun_runtime_listening") || child.exitCode !== null)
      expect(output).toContain("bosun_runtime_listening")
      const warnings = output.split("\n").filter((line) => line.includes("bosun_runtime_agents_not_isolated"))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain("PLATFORM_CONTAINER or HOSTED_SANDBOX")
      expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700)
      const attempt = { run_id: "plain", attempt_id: "plain:1" }
      // No checkout: the fixture repository is root's, and git refuses to serve it to another user.
      await call(
        base,
        "POST",
        "/v1/runs",
        runRequest(fixtures, { ...attempt, agent: { kind: "CUSTOM", profile: "who" }, repositories: [] })
      )
      const end = await awaitEnd(base, attempt.attempt_id)
      expect(end.status, JSON.stringify(end.error)).toBe("SUCCEEDED")
      const uid = agentEvents(dataDir, attempt.attempt_id).find((event) => event.type === "identity")?.uid
      expect(uid).toBe(isRoot ? 65534 : process.getuid?.())
    } finally {
      child.kill("SIGTERM")
      await exited
    }
  })
})
