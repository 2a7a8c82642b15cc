/**
 * `npm start` on a fresh machine: the real server process on its embedded defaults (no
 * DATABASE_URL), a real embedded Postgres under a fresh BOSUN_DATA_DIR. First start prints the
 * bootstrap token and dashboard URL once; a second start reuses the secrets; SIGTERM stops the
 * server, its Postgres and its embedded agent runtime; a server killed outright leaves no runtime.
 */

import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { freePort } from "@bosun/platform/EmbeddedPostgres"
import { eventually } from "@bosun/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnServer } from "../support/Process.ts"

const fetchStatus = (url: string) =>
  Effect.promise(() =>
    fetch(url).then(
      async (r) => ({ status: r.status, requestId: r.headers.get("x-request-id"), body: await r.text() }),
      () => ({ status: 0, requestId: null, body: "" })
    )
  )

/** The embedded runtime's URL, from the server's `bosun_listening` line. */
const runtimeUrl = (stdout: string): string => {
  const line = stdout.split("\n").find((l) => l.includes('"msg":"bosun_listening"'))
  assert.isDefined(line, stdout)
  const fields = JSON.parse(line ?? "{}")
  assert.strictEqual(fields.runtime_embedded, true)
  return String(fields.runtime_url)
}

describe("embedded start", () => {
  it.live(
    "comes up on the embedded defaults, answers health and 404 envelopes, reuses its secrets, and stops cleanly",
    () =>
      Effect.gen(function* () {
        const dataDir = yield* Effect.acquireRelease(
          Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "bosun-e2e-"))),
          // As root the embedded runtime keeps its workspaces beside the data directory.
          (dir) =>
            Effect.promise(() =>
              Promise.all([dir, `${dir}-workspaces`].map((d) => fs.rm(d, { recursive: true, force: true })))
            )
        )
        const port = yield* freePort
        const base = `http://127.0.0.1:${port}`
        const env = { BOSUN_DATA_DIR: dataDir, BOSUN_PORT: String(port) }

        const first = yield* spawnServer(env)
        const health = yield* eventually(fetchStatus(`${base}/healthz`), (r) => r.status === 200).pipe(
          Effect.catch(() => Effect.die(new Error(`server did not come up: ${first.stderr()}`)))
        )
        assert.isString(health.requestId)
        const ready = yield* eventually(fetchStatus(`${base}/readyz`), (r) => r.status === 200)
        assert.deepStrictEqual(JSON.parse(ready.body), { status: "ready" })
        assert.isString(ready.requestId)
        const missing = yield* fetchStatus(`${base}/api/v1/does-not-exist`)
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(JSON.parse(missing.body).error.code, "route_not_found")

        // The embedded agent runtime answers on loopback and refuses a request without its token.
        const runtime = runtimeUrl(first.stdout())
        assert.match(runtime, /^http:\/\/127\.0\.0\.1:\d+$/)
        const runtimeHealth = yield* fetchStatus(`${runtime}/healthz`)
        assert.strictEqual(runtimeHealth.status, 200)
        assert.strictEqual(JSON.parse(runtimeHealth.body).protocol_version, "1.1")
        const unauthenticated = yield* fetchStatus(`${runtime}/v1/runs/nope/result`)
        assert.strictEqual(unauthenticated.status, 401)

        const secretsFile = path.join(dataDir, "secrets.json")
        const stat = yield* Effect.promise(() => fs.stat(secretsFile))
        assert.strictEqual(stat.mode & 0o777, 0o600)
        const secrets = JSON.parse(yield* Effect.promise(() => fs.readFile(secretsFile, "utf8")))
        assert.strictEqual(Buffer.from(secrets.master_key, "base64").length, 32)
        const banner = first.stderr()
        assert.include(banner, `Bootstrap token: ${secrets.bootstrap_token}`)
        assert.include(banner, `Dashboard:       ${base}/`)
        assert.notInclude(first.stdout(), secrets.bootstrap_token)

        first.child.kill("SIGTERM")
        assert.strictEqual(yield* first.exited, 0)
        const pidFile = path.join(dataDir, "pg", "postmaster.pid")
        const pidLeft = yield* Effect.promise(() =>
          fs.access(pidFile).then(
            () => true,
            () => false
          )
        )
        assert.isFalse(pidLeft, "embedded Postgres stopped with the server")
        assert.strictEqual((yield* fetchStatus(`${runtime}/healthz`)).status, 0, "the runtime stopped with the server")

        const second = yield* spawnServer(env)
        yield* eventually(fetchStatus(`${base}/readyz`), (r) => r.status === 200)
        const again = JSON.parse(yield* Effect.promise(() => fs.readFile(secretsFile, "utf8")))
        assert.deepStrictEqual(again, secrets)
        assert.notInclude(second.stderr(), "Bootstrap token")
        second.child.kill("SIGINT")
        assert.strictEqual(yield* second.exited, 0)
      }),
    120_000
  )

  it.live(
    "a server killed with SIGKILL leaves no embedded runtime behind",
    () =>
      Effect.gen(function* () {
        const dataDir = yield* Effect.acquireRelease(
          Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "bosun-e2e-"))),
          // As root the embedded runtime keeps its workspaces beside the data directory.
          (dir) =>
            Effect.promise(() =>
              Promise.all([dir, `${dir}-workspaces`].map((d) => fs.rm(d, { recursive: true, force: true })))
            )
        )
        const port = yield* freePort
        const server = yield* spawnServer({ BOSUN_DATA_DIR: dataDir, BOSUN_PORT: String(port) })
        yield* eventually(fetchStatus(`http://127.0.0.1:${port}/readyz`), (r) => r.status === 200).pipe(
          Effect.catch(() => Effect.die(new Error(`server did not come up: ${server.stderr()}`)))
        )
        const runtime = runtimeUrl(server.stdout())
        assert.strictEqual((yield* fetchStatus(`${runtime}/healthz`)).status, 200)
        server.child.kill("SIGKILL")
        yield* server.exited
        yield* eventually(fetchStatus(`${runtime}/healthz`), (r) => r.status === 0).pipe(
          Effect.catch(() => Effect.die(new Error("the embedded runtime outlived its server")))
        )
        // Postgres is not supervised that way (it outlives a SIGKILLed server, and the next start
        // takes it over); stop it so the test leaves nothing running.
        const pid = Number(
          (yield* Effect.promise(() => fs.readFile(path.join(dataDir, "pg", "postmaster.pid"), "utf8"))).split("\n")[0]
        )
        process.kill(pid, "SIGTERM")
        // Stopped before the data directory is removed: a Postgres still shutting down writes into
        // it. Its shutdown's last step removes postmaster.pid (a zombie's pid would still answer).
        const pidFile = Effect.promise(() =>
          fs.access(path.join(dataDir, "pg", "postmaster.pid")).then(
            () => true,
            () => false
          )
        )
        yield* eventually(pidFile, (present) => !present).pipe(
          Effect.catch(() => Effect.die(new Error(`the embedded Postgres (pid ${pid}) did not stop`)))
        )
      }),
    120_000
  )
})
