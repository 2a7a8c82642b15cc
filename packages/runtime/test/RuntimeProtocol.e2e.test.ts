/**
 * Protocol conformance of the real runtime process (docs/interface.md: Agent runtime protocol),
 * every answer checked against the domain schemas: health, the token and protocol checks (401, 400,
 * 426), idempotent start (201, 200, 409, 429, 400, 422), the event tail (replay after reconnect
 * with no gap and no duplicate, heartbeats, a disconnect never stops a run), files, cancel within
 * the grace period, a crashing agent, the time limit, and a restart mid-run. Agents are custom
 * profiles: shell scripts speaking the runtime's JSONL format.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { RunEvent, RunHeartbeat, RunState, RuntimeHealth } from "@bosun/domain"
import {
  awaitEnd,
  call,
  isAlive,
  makeFixtures,
  protocolHeaders,
  type RuntimeProcess,
  readTail,
  runRequest,
  startRuntime,
  TOKEN
} from "@bosun/testing/RuntimeProcess"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"

const fixtures = makeFixtures()
const pidFile = (name: string) => path.join(fixtures.root, `${name}.pid`)
/** The pid an agent script wrote, once the whole line is there (the file exists before `echo` writes it). */
const writtenPid = async (name: string) => {
  const until = Date.now() + 10_000
  for (;;) {
    const text = fs.existsSync(pidFile(name)) ? fs.readFileSync(pidFile(name), "utf8") : ""
    if (text.endsWith("\n") || Date.now() > until) return Number(text)
    await new Promise((r) => setTimeout(r, 20))
  }
}

const profiles = {
  writer: {
    command: [
      fixtures.script(
        "writer.sh",
        `read -r prompt
echo "{\\"type\\":\\"step\\",\\"prompt\\":\\"$prompt\\",\\"model\\":\\"$BOSUN_MODEL\\"}"
echo "a plain line"
echo "changed" >> app/README.md
echo "fresh" > app/new.txt
echo '{"findings":2}' > "$BOSUN_OUTPUT_DIR/report.json"
echo "<h1>report</h1>" > "$BOSUN_ARTIFACTS_DIR/index.html"
echo '{"type":"usage","input_tokens":120,"output_tokens":30,"cost_usd":0.002}'
env > "$BOSUN_OUTPUT_DIR/env.txt"`
      )
    ]
  },
  counter: {
    command: [
      fixtures.script(
        "counter.sh",
        `i=1
while [ $i -le 300 ]; do
  echo "{\\"type\\":\\"tick\\",\\"n\\":$i}"
  if [ $((i % 20)) -eq 0 ]; then sleep 0.02; fi
  i=$((i + 1))
done`
      )
    ]
  },
  sleeper: {
    command: [fixtures.script("sleeper.sh", `echo $$ > "$PID_FILE"\nexec sleep 600`)],
    env: { PID_FILE: pidFile("sleeper") }
  },
  stubborn: {
    command: [fixtures.script("stubborn.sh", `trap '' TERM\necho $$ > "$PID_FILE"\nwhile true; do sleep 0.1; done`)],
    env: { PID_FILE: pidFile("stubborn") }
  },
  napper: { command: [fixtures.script("napper.sh", "sleep 1.2")] },
  crasher: { command: [fixtures.script("crasher.sh", 'echo "loading" >&2\necho "boom: it broke" >&2\nexit 3')] },
  leaker: {
    command: [
      fixtures.script(
        "leaker.sh",
        `echo "{\\"type\\":\\"env\\",\\"credentials\\":$BOSUN_PROVIDER_CREDENTIALS}"
echo "the key is sk-leak-secret-1234"
echo "rejected config: {\\"key\\": \\"sk-leak-secret-1234\\"}" >&2
exit 2`
      )
    ]
  },
  liar: { command: [fixtures.script("liar.sh", `echo '{"type":"error","code":"model_refused","message":"no"}'`)] }
}

const settings = {
  BOSUN_RUNTIME_AGENTS: JSON.stringify(profiles),
  BOSUN_RUNTIME_HEARTBEAT: "200 millis",
  BOSUN_RUNTIME_CANCEL_GRACE: "500 millis",
  BOSUN_RUNTIME_MAX_RUNS: "3",
  // As in a platform container: the pod's egress proxy and the deployment CA, which agents share.
  HTTPS_PROXY: "http://run-x%3A1:proxy-secret@127.0.0.1:3128",
  GIT_SSL_CAINFO: "/etc/bosun/ca/ca.crt"
}

const decodeState = Schema.decodeUnknownSync(RunState)
const isEvent = Schema.is(RunEvent)
const isHeartbeat = Schema.is(RunHeartbeat)

let runtime: RuntimeProcess
let attempt = 0
/** A fresh pair of ids per run. */
const ids = () => {
  attempt++
  return { run_id: `run-${attempt}`, attempt_id: `run-${attempt}:1` }
}

beforeAll(async () => {
  runtime = await startRuntime({ ...settings, BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "data") })
})

afterAll(async () => {
  await runtime?.stop()
})

describe("health and guards", () => {
  it("GET /healthz reports the protocol, the toolchain and the run counts, without a token", async () => {
    const response = await fetch(`${runtime.base}/healthz`)
    expect(response.status).toBe(200)
    const health = Schema.decodeUnknownSync(RuntimeHealth)(await response.json())
    expect(health.status).toBe("ok")
    expect(health.protocol_version).toBe("1.1")
    expect(health.max_runs).toBe(3)
    expect(health.active_runs).toBeGreaterThanOrEqual(0)
    expect(health.toolchain.git).toMatch(/^\d+\.\d+/)
    expect(health.toolchain.custom_profiles).toEqual(Object.keys(profiles).sort())
  })

  it("answers 401 without the bearer token or with another one, 400 without the protocol header, 426 for another major", async () => {
    const post = (headers: Record<string, string>) =>
      fetch(`${runtime.base}/v1/runs`, { method: "POST", headers, body: JSON.stringify(runRequest(fixtures, ids())) })
    const missing = await post({ "x-bosun-protocol": "1.0", "content-type": "application/json" })
    expect(missing.status).toBe(401)
    expect(missing.headers.get("www-authenticate")).toBe("Bearer")
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("unauthorized")
    const wrong = await post({ ...protocolHeaders, authorization: `Bearer ${TOKEN}x` })
    expect(wrong.status).toBe(401)
    const noVersion = await post({ authorization: `Bearer ${TOKEN}`, "content-type": "application/json" })
    expect(noVersion.status).toBe(400)
    expect(((await noVersion.json()) as { error: { code: string } }).error.code).toBe("protocol_version_required")
    const future = await post({ ...protocolHeaders, "x-bosun-protocol": "2.0" })
    expect(future.status).toBe(426)
    expect(future.headers.get("x-bosun-protocol")).toBe("1.1")
    expect(await future.json()).toEqual({
      error: {
        code: "protocol_version_unsupported",
        message: "This runtime speaks protocol 1.1; 2.0 is not compatible"
      }
    })
    const unknownRun = await call(runtime.base, "GET", "/v1/runs/nope:1/result")
    expect(unknownRun.status).toBe(404)
  })
})

describe("starting a run", () => {
  it("starts with 201, answers the same request again with 200 and the same run, and another request under the same ids with 409", async () => {
    const request = runRequest(fixtures, ids())
    const first = await call(runtime.base, "POST", "/v1/runs", request)
    expect(first.status).toBe(201)
    const state = decodeState(first.json)
    expect(state).toMatchObject({
      run_id: request.run_id,
      attempt_id: request.attempt_id,
      agent: "CUSTOM",
      status: "RUNNING",
      retryable: false,
      exit_code: null,
      error: null,
      files: [],
      finished_at: null
    })
    const again = await call(runtime.base, "POST", "/v1/runs", request)
    expect(again.status).toBe(200)
    expect(decodeState(again.json).started_at).toBe(state.started_at)
    const other = await call(runtime.base, "POST", "/v1/runs", { ...request, prompt: "something else" })
    expect(other.status).toBe(409)
    expect(other.json.error.code).toBe("run_conflict")
    const stolen = await call(runtime.base, "POST", "/v1/runs", { ...request, run_id: "another-run" })
    expect(stolen.status).toBe(409)
    await awaitEnd(runtime.base, String(request.attempt_id))
  })

  it("refuses a malformed request with 400 naming the field, an unknown profile with 422, and a start over the maximum with 429", async () => {
    const bad = await call(runtime.base, "POST", "/v1/runs", runRequest(fixtures, { ...ids(), time_limit_seconds: 0 }))
    expect(bad.status).toBe(400)
    expect(bad.json.error.code).toBe("invalid_body")
    expect(bad.json.error.message).toContain("time_limit_seconds")
    const extra = await call(runtime.base, "POST", "/v1/runs", { ...runRequest(fixtures, ids()), surprise: true })
    expect(extra.status).toBe(400)
    const notJson = await fetch(`${runtime.base}/v1/runs`, { method: "POST", headers: protocolHeaders, body: "{" })
    expect(notJson.status).toBe(400)
    const unknown = await call(
      runtime.base,
      "POST",
      "/v1/runs",
      runRequest(fixtures, { ...ids(), agent: { kind: "CUSTOM", profile: "nobody" } })
    )
    expect(unknown.status).toBe(422)
    expect(unknown.json.error.code).toBe("agent_unavailable")

    const sleepers = [ids(), ids(), ids()]
    for (const key of sleepers) {
      const started = await call(
        runtime.base,
        "POST",
        "/v1/runs",
        runRequest(fixtures, { ...key, agent: { kind: "CUSTOM", profile: "napper" } })
      )
      expect(started.status).toBe(201)
    }
    const full = await call(runtime.base, "POST", "/v1/runs", runRequest(fixtures, ids()))
    expect(full.status).toBe(429)
    expect(full.headers.get("retry-after")).toBe("5")
    expect(full.json.error.code).toBe("too_many_runs")
    for (const key of sleepers) await awaitEnd(runtime.base, key.attempt_id)
  })
})

describe("a run's events and files", () => {
  it("runs the agent in a checkout and serves its diff, outputs and artifacts, with usage and the final state", async () => {
    const key = ids()
    await call(runtime.base, "POST", "/v1/runs", runRequest(fixtures, key))
    const final = decodeState(await awaitEnd(runtime.base, key.attempt_id))
    expect(final.status).toBe("SUCCEEDED")
    expect(final.phase).toBe("DONE")
    expect(final.exit_code).toBe(0)
    expect(final.usage.input_tokens).toBe(120)
    expect(final.usage.output_tokens).toBe(30)
    expect(final.usage.cost_usd).toBeCloseTo(0.002)
    expect(final.usage.duration_ms).toBeGreaterThan(0)
    expect(final.files.map((file) => [file.path, file.kind, file.content_type])).toEqual([
      ["changes.diff", "DIFF", "text/x-diff"],
      ["artifacts/index.html", "ARTIFACT", "text/html; charset=utf-8"],
      ["outputs/env.txt", "OUTPUT", "text/plain; charset=utf-8"],
      ["outputs/report.json", "OUTPUT", "application/json"]
    ])

    const diff = await call(runtime.base, "GET", `/v1/runs/${key.attempt_id}/files/changes.diff`)
    expect(diff.status).toBe(200)
    expect(diff.text).toContain("--- a/app/README.md\n+++ b/app/README.md")
    expect(diff.text).toContain("+changed")
    expect(diff.text).toContain("+++ b/app/new.txt")
    const meta = final.files[0]
    expect(diff.headers.get("x-content-sha256")).toBe(meta?.sha256)
    expect(createHash("sha256").update(diff.text).digest("hex")).toBe(meta?.sha256)
    expect(Buffer.byteLength(diff.text)).toBe(meta?.size)

    const report = await call(runtime.base, "GET", `/v1/runs/${key.attempt_id}/files/outputs/report.json`)
    expect(report.json).toEqual({ findings: 2 })
    const html = await call(runtime.base, "GET", `/v1/runs/${key.attempt_id}/files/artifacts/index.html`)
    expect(html.headers.get("content-type")).toContain("text/html")
    expect(html.text).toBe("<h1>report</h1>\n")

    // The agent's environment holds none of the runtime's own settings, its token least of all.
    const env = await call(runtime.base, "GET", `/v1/runs/${key.attempt_id}/files/outputs/env.txt`)
    expect(env.text).not.toContain(TOKEN)
    expect(env.text).not.toContain("BOSUN_RUNTIME_")
    expect(env.text).toContain(`BOSUN_ATTEMPT_ID=${key.attempt_id}`)
    expect(env.text).toContain("HTTPS_PROXY=http://run-x%3A1:proxy-secret@127.0.0.1:3128")
    expect(env.text).toContain("NODE_USE_ENV_PROXY=1")
    expect(env.text).toContain("GIT_SSL_CAINFO=/etc/bosun/ca/ca.crt")

    for (const missing of ["nothing.txt", "../request.json", "outputs/../../request.json", "files/changes.diff"]) {
      const response = await call(runtime.base, "GET", `/v1/runs/${key.attempt_id}/files/${missing}`)
      expect(response.status, missing).toBe(404)
    }

    const tail = await readTail(`${runtime.base}/v1/runs/${key.attempt_id}/events?after=0`)
    expect(tail.contentType).toBe("application/x-ndjson")
    const events = tail.lines.filter(isEvent)
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1))
    expect(events.map((event) => event.type)).toEqual([
      "run.phase",
      "run.phase",
      "agent.event",
      "agent.output",
      "agent.event",
      "run.phase",
      "run.finished"
    ])
    expect(events[2]?.data).toEqual({ type: "step", prompt: "make the change", model: "fake/model" })
    expect(events[3]?.data).toEqual({ line: "a plain line" })
    expect(events.filter((event) => event.type === "run.phase").map((event) => event.data)).toEqual([
      { phase: "PREPARING" },
      { phase: "AGENT" },
      { phase: "COLLECTING" }
    ])
    expect(decodeState(events[6]?.data)).toEqual({ ...final })
  })

  it("replays exactly what a reconnecting tail missed: no gap, no duplicate, live to the end", async () => {
    const key = ids()
    await call(
      runtime.base,
      "POST",
      "/v1/runs",
      runRequest(fixtures, { ...key, agent: { kind: "CUSTOM", profile: "counter" } })
    )
    const url = (after: number) => `${runtime.base}/v1/runs/${key.attempt_id}/events?after=${after}`
    const seen: Array<number> = []
    let after = 0
    // Disconnect after 40 lines each time, then resume from the last sequence number seen.
    for (let round = 0; round < 50; round++) {
      const part = await readTail(url(after), 40)
      const events = part.lines.filter(isEvent)
      for (const event of events) seen.push(event.seq)
      after = seen[seen.length - 1] ?? after
      if (events.some((event) => event.type === "run.finished")) break
    }
    const final = decodeState(await awaitEnd(runtime.base, key.attempt_id))
    expect(final.status).toBe("SUCCEEDED")
    expect(seen).toEqual(Array.from({ length: final.last_seq }, (_, index) => index + 1))
    // 300 ticks, three phases and run.finished.
    expect(final.last_seq).toBe(300 + 4)
  })

  it("sends a heartbeat with the phase every period while the agent is quiet, and never stores it", async () => {
    const key = ids()
    await call(
      runtime.base,
      "POST",
      "/v1/runs",
      runRequest(fixtures, { ...key, agent: { kind: "CUSTOM", profile: "napper" } })
    )
    const tail = await readTail(`${runtime.base}/v1/runs/${key.attempt_id}/events?after=0`)
    const heartbeats = tail.lines.filter(isHeartbeat)
    expect(heartbeats.length).toBeGreaterThanOrEqual(3)
    expect(heartbeats.some((beat) => beat.phase === "AGENT")).toBe(true)
    for (const beat of heartbeats) expect(Object.keys(beat).sort()).toEqual(["at", "last_seq", "phase", "type"])
    const replay = await readTail(`${runtime.base}/v1/runs/${key.attempt_id}/events?after=0`)
    expect(replay.lines.filter(isHeartbeat)).toEqual([])
    expect(replay.lines.filter(isEvent).length).toBe(tail.lines.filter(isEvent).length)
  })

  it("keeps running when the client disconnects, and refuses a bad after= with 400 and an unknown run with 404", async () => {
    const key = ids()
    await call(
      runtime.base,
      "POST",
      "/v1/runs",
      runRequest(fixtures, { ...key, agent: { kind: "CUSTOM", profile: "napper" } })
    )
    await readTail(`${runtime.base}/v1/runs/${key.attempt_id}/events?after=0`, 1)
    expect(decodeState(await awaitEnd(runtime.base, key.attempt_id)).status).toBe("SUCCEEDED")
    const bad = await call(runtime.base, "GET", `/v1/runs/${key.attempt_id}/events?after=-1`)
    expect(bad.status).toBe(400)
    expect(bad.json.error.code).toBe("invalid_query_parameter")
    const unknown = await call(runtime.base, "GET", "/v1/runs/never-started:1/events")
    expect(unknown.status).toBe(404)
    expect(unknown.json.error.code).toBe("run_not_found")
  })
})

describe("ending a run", () => {
  it("cancels with SIGTERM, and SIGKILL after the grace period for an agent that ignores it; the process group is gone", async () => {
    for (const profile of ["sleeper", "stubborn"] as const) {
      const key = ids()
      fs.rmSync(pidFile(profile), { force: true })
      await call(runtime.base, "POST", "/v1/runs", runRequest(fixtures, { ...key, agent: { kind: "CUSTOM", profile } }))
      const pid = await writtenPid(profile)
      expect(isAlive(pid)).toBe(true)
      const started = Date.now()
      const cancelled = await call(runtime.base, "DELETE", `/v1/runs/${key.attempt_id}`)
      const took = Date.now() - started
      expect(cancelled.status).toBe(200)
      const state = decodeState(cancelled.json)
      expect(state.status).toBe("CANCELLED")
      expect(state.phase).toBe("DONE")
      expect(took, profile).toBeLessThan(profile === "stubborn" ? 3_000 : 1_500)
      if (profile === "stubborn") expect(took).toBeGreaterThanOrEqual(450)
      expect(isAlive(pid)).toBe(false)
      const again = await call(runtime.base, "DELETE", `/v1/runs/${key.attempt_id}`)
      expect(decodeState(again.json).status).toBe("CANCELLED")
    }
    const unknown = await call(runtime.base, "DELETE", "/v1/runs/never-started:1")
    expect(unknown.status).toBe(404)
  })

  it("fails a run whose agent crashes with its exit code and its last stderr lines as an event", async () => {
    const key = ids()
    await call(
      runtime.base,
      "POST",
      "/v1/runs",
      runRequest(fixtures, { ...key, agent: { kind: "CUSTOM", profile: "crasher" } })
    )
    const final = decodeState(await awaitEnd(runtime.base, key.attempt_id))
    expect(final).toMatchObject({
      status: "FAILED",
      exit_code: 3,
      retryable: false,
      error: { code: "agent_failed", message: "The agent exited with code 3" }
    })
    const events = (await readTail(`${runtime.base}/v1/runs/${key.attempt_id}/events?after=0`)).lines.filter(isEvent)
    expect(events.find((event) => event.type === "agent.stderr")?.data).toEqual({
      lines: ["loading", "boom: it broke"]
    })
  })

  it("never stores or streams a credential the agent prints, on stdout or stderr", async () => {
    const key = ids()
    await call(
      runtime.base,
      "POST",
      "/v1/runs",
      runRequest(fixtures, {
        ...key,
        agent: { kind: "CUSTOM", profile: "leaker" },
        provider_credentials: { fake: { type: "api", key: "sk-leak-secret-1234" } }
      })
    )
    expect(decodeState(await awaitEnd(runtime.base, key.attempt_id)).exit_code).toBe(2)
    const tail = await readTail(`${runtime.base}/v1/runs/${key.attempt_id}/events?after=0`)
    const text = JSON.stringify(tail.lines)
    expect(text).not.toContain("sk-leak-secret-1234")
    const events = tail.lines.filter(isEvent)
    expect(events.find((event) => event.type === "agent.event")?.data).toEqual({
      type: "env",
      credentials: { fake: { type: "api", key: "[redacted]" } }
    })
    expect(events.find((event) => event.type === "agent.output")?.data).toEqual({ line: "the key is [redacted]" })
    expect(events.find((event) => event.type === "agent.stderr")?.data).toEqual({
      lines: ['rejected config: {"key": "[redacted]"}']
    })
    const log = fs.readFileSync(path.join(fixtures.root, "data", "runs", key.attempt_id, "events.ndjson"), "utf8")
    expect(log).not.toContain("sk-leak-secret-1234")
  })

  it("fails a run whose agent reports an error though it exits 0, and one over its time limit", async () => {
    const liar = ids()
    await call(
      runtime.base,
      "POST",
      "/v1/runs",
      runRequest(fixtures, { ...liar, agent: { kind: "CUSTOM", profile: "liar" } })
    )
    expect(decodeState(await awaitEnd(runtime.base, liar.attempt_id))).toMatchObject({
      status: "FAILED",
      exit_code: 0,
      error: { code: "model_refused", message: "no" }
    })
    const slow = ids()
    await call(
      runtime.base,
      "POST",
      "/v1/runs",
      runRequest(fixtures, { ...slow, agent: { kind: "CUSTOM", profile: "sleeper" }, time_limit_seconds: 1 })
    )
    expect(decodeState(await awaitEnd(runtime.base, slow.attempt_id))).toMatchObject({
      status: "FAILED",
      error: { code: "time_limit_exceeded", message: "The agent did not finish within 1 s" }
    })
  })

  it("fails a run whose repository cannot be checked out, as retryable, naming git's complaint", async () => {
    const key = ids()
    await call(
      runtime.base,
      "POST",
      "/v1/runs",
      runRequest(fixtures, {
        ...key,
        repositories: [{ id: "r", url: fixtures.repoUrl, ref: "no-such-branch", path: "app", credential: null }]
      })
    )
    const final = decodeState(await awaitEnd(runtime.base, key.attempt_id))
    expect(final.status).toBe("FAILED")
    expect(final.retryable).toBe(true)
    expect(final.error?.code).toBe("checkout_failed")
    expect(final.error?.message).toContain("no-such-branch")
  })
})

/** Whether the process is gone (or a zombie) within `ms`. */
const diesWithin = async (pid: number, ms: number) => {
  const until = Date.now() + ms
  while (isAlive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
  return !isAlive(pid)
}

describe("a restart", () => {
  it("marks a run cut off by a restart failed and retryable, stops its agent, and still serves its log", async () => {
    const dataDir = path.join(fixtures.root, "restart-data")
    const first = await startRuntime({ ...settings, BOSUN_RUNTIME_DATA_DIR: dataDir })
    fs.rmSync(pidFile("sleeper"), { force: true })
    const key = { run_id: "restart-run", attempt_id: "restart-run:1" }
    await call(
      first.base,
      "POST",
      "/v1/runs",
      runRequest(fixtures, { ...key, agent: { kind: "CUSTOM", profile: "sleeper" } })
    )
    const pid = await writtenPid("sleeper")
    await first.stop("SIGKILL")
    expect(isAlive(pid)).toBe(true)

    const second = await startRuntime({ ...settings, BOSUN_RUNTIME_DATA_DIR: dataDir })
    const result = await call(second.base, "GET", `/v1/runs/${key.attempt_id}/result`)
    const state = decodeState(result.json)
    expect(state).toMatchObject({
      status: "FAILED",
      retryable: true,
      phase: "DONE",
      error: { code: "runtime_restarted", message: "The runtime restarted while the run was in progress" }
    })
    // SIGKILL is delivered asynchronously: on a loaded machine the process may still be listed for a moment.
    expect(await diesWithin(pid, 5_000)).toBe(true)
    const events = (await readTail(`${second.base}/v1/runs/${key.attempt_id}/events?after=0`)).lines.filter(isEvent)
    expect(events.map((event) => event.type)).toEqual(["run.phase", "run.phase", "run.finished"])
    expect(events.map((event) => event.seq)).toEqual([1, 2, 3])
    // The same request again is the same (failed) run; a new attempt is what a retry sends.
    const again = await call(
      second.base,
      "POST",
      "/v1/runs",
      runRequest(fixtures, { ...key, agent: { kind: "CUSTOM", profile: "sleeper" } })
    )
    expect(again.status).toBe(200)
    expect(decodeState(again.json).status).toBe("FAILED")
    await second.stop()
  })
})
