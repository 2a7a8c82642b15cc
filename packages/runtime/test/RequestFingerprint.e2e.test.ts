/**
 * Idempotent start across restarts of the real runtime process with another token, as the
 * server's embedded runtime gets at each start: the request fingerprint is keyed with a secret of
 * the data directory (`fingerprint.key`, 0600, made once), and one made the old way, keyed with
 * the token, still matches.
 */
import { createHmac } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { canonicalJson, RunRequest, RunState } from "@bosun/domain"
import { awaitEnd, makeFixtures, runRequest, startRuntime, TOKEN } from "@bosun/testing/RuntimeProcess"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"

const fixtures = makeFixtures()

const profiles = {
  quick: { command: [fixtures.script("quick.sh", 'echo "done"')] }
}

const settings = { BOSUN_RUNTIME_AGENTS: JSON.stringify(profiles) }

/** The token of the runtime after its restart: not the one `awaitEnd` and `call` carry. */
const OTHER_TOKEN = "another-runtime-token-9876543210"

const decodeState = Schema.decodeUnknownSync(RunState)

/** A protocol call with `token` as the bearer token. */
const callWith = async (token: string, base: string, method: string, pathname: string, body?: unknown) => {
  const response = await fetch(`${base}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "x-bosun-protocol": "1.0", "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, json: (text === "" ? undefined : JSON.parse(text)) as unknown }
}

const errorOf = (json: unknown) =>
  (json as { readonly error: { readonly code: string; readonly message: string } }).error

const keyFile = (dataDir: string) => path.join(dataDir, "fingerprint.key")

describe("request fingerprint", () => {
  it("answers the same start with 200 and the stored run after a restart with another token, and another request with 409", async () => {
    const dataDir = path.join(fixtures.root, "token-change")
    const key = { run_id: "fp-run", attempt_id: "fp-run:1" }
    const request = runRequest(fixtures, { ...key, agent: { kind: "CUSTOM", profile: "quick" } })

    const first = await startRuntime({ ...settings, BOSUN_RUNTIME_DATA_DIR: dataDir })
    const created = await callWith(TOKEN, first.base, "POST", "/v1/runs", request)
    expect(created.status).toBe(201)
    const final = decodeState(await awaitEnd(first.base, key.attempt_id))
    expect(final.status).toBe("SUCCEEDED")
    await first.stop()

    const second = await startRuntime({
      ...settings,
      BOSUN_RUNTIME_DATA_DIR: dataDir,
      BOSUN_RUNTIME_TOKEN: OTHER_TOKEN
    })
    try {
      // The token really changed: the old one is refused.
      expect((await callWith(TOKEN, second.base, "GET", `/v1/runs/${key.attempt_id}/result`)).status).toBe(401)

      const again = await callWith(OTHER_TOKEN, second.base, "POST", "/v1/runs", request)
      expect(again.status).toBe(200)
      const state = decodeState(again.json)
      expect(state.run_id).toBe(key.run_id)
      expect(state.attempt_id).toBe(key.attempt_id)
      expect(state.status).toBe("SUCCEEDED")
      expect(state.phase).toBe("DONE")
      expect(state.exit_code).toBe(0)
      expect(state.started_at).toBe(final.started_at)
      expect(state.finished_at).toBe(final.finished_at)
      expect(state.last_seq).toBe(final.last_seq)
      expect(state.files).toEqual(final.files)

      const other = await callWith(OTHER_TOKEN, second.base, "POST", "/v1/runs", {
        ...request,
        prompt: "another prompt"
      })
      expect(other.status).toBe(409)
      expect(errorOf(other.json).code).toBe("run_conflict")
      expect(errorOf(other.json).message).toBe(
        `Run ${key.run_id} attempt ${key.attempt_id} was started with a different request`
      )
    } finally {
      await second.stop()
    }
  })

  it("keeps the key in the data directory as 32 bytes of mode 0600, and reuses it across restarts", async () => {
    const dataDir = path.join(fixtures.root, "key-reuse")
    const first = await startRuntime({ ...settings, BOSUN_RUNTIME_DATA_DIR: dataDir })
    await first.stop()
    const made = fs.statSync(keyFile(dataDir))
    expect(made.isFile()).toBe(true)
    expect(made.mode & 0o777).toBe(0o600)
    expect(made.size).toBe(32)
    const bytes = fs.readFileSync(keyFile(dataDir))
    expect(fs.readdirSync(dataDir).filter((name) => name.startsWith("fingerprint.key"))).toEqual(["fingerprint.key"])

    const second = await startRuntime({
      ...settings,
      BOSUN_RUNTIME_DATA_DIR: dataDir,
      BOSUN_RUNTIME_TOKEN: OTHER_TOKEN
    })
    await second.stop()
    const kept = fs.statSync(keyFile(dataDir))
    expect(kept.mode & 0o777).toBe(0o600)
    expect(kept.ino).toBe(made.ino)
    expect(fs.readFileSync(keyFile(dataDir)).equals(bytes)).toBe(true)
  })

  it("still matches a run whose stored fingerprint was keyed with the token, as before the key existed", async () => {
    const dataDir = path.join(fixtures.root, "legacy")
    const key = { run_id: "legacy-run", attempt_id: "legacy-run:1" }
    const request = runRequest(fixtures, { ...key, agent: { kind: "CUSTOM", profile: "quick" } })

    const first = await startRuntime({ ...settings, BOSUN_RUNTIME_DATA_DIR: dataDir })
    expect((await callWith(TOKEN, first.base, "POST", "/v1/runs", request)).status).toBe(201)
    const final = decodeState(await awaitEnd(first.base, key.attempt_id))
    await first.stop()

    // What an earlier runtime wrote: the fingerprint keyed with its token.
    const requestFile = path.join(dataDir, "runs", key.attempt_id, "request.json")
    const stored = JSON.parse(fs.readFileSync(requestFile, "utf8")) as Record<string, unknown>
    const legacy = createHmac("sha256", TOKEN)
      .update(canonicalJson(Schema.decodeUnknownSync(RunRequest)(request)))
      .digest("hex")
    expect(stored.fingerprint).not.toBe(legacy)
    fs.writeFileSync(requestFile, JSON.stringify({ ...stored, fingerprint: legacy }))

    const second = await startRuntime({ ...settings, BOSUN_RUNTIME_DATA_DIR: dataDir })
    try {
      const again = await callWith(TOKEN, second.base, "POST", "/v1/runs", request)
      expect(again.status).toBe(200)
      const state = decodeState(again.json)
      expect(state.attempt_id).toBe(key.attempt_id)
      expect(state.status).toBe("SUCCEEDED")
      expect(state.started_at).toBe(final.started_at)
      const other = await callWith(TOKEN, second.base, "POST", "/v1/runs", { ...request, prompt: "another prompt" })
      expect(other.status).toBe(409)
      expect(errorOf(other.json).code).toBe("run_conflict")
    } finally {
      await second.stop()
    }
  })
})
