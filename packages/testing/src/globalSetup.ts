/**
 * Vitest global setup: the real components every test run needs, started once per run.
 *
 * - Postgres: `DATABASE_URL` when set (its database is used only to create and drop one fresh
 *   database per test file), else an embedded Postgres in a temporary directory.
 * - Redis: `REDIS_URL` when set, else a `redis-server` from PATH on a free loopback port, else
 *   none: tests that need it skip with a printed reason. Under `CI=true` a missing component is a
 *   failure, never a skip.
 * - S3: an s3rver process (a devDependency, so always there) on a free loopback port.
 */

import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { EmbeddedPostgres, freePort } from "@bosun/platform/EmbeddedPostgres"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import type { TestProject } from "vitest/node"
import { provide } from "./Provided.ts"

const inCi = process.env.CI === "true" || process.env.CI === "1"

const redisPing = (url: string, timeoutMs = 1000): Promise<boolean> =>
  new Promise((resolve) => {
    const target = new URL(url)
    const socket = net.connect({ host: target.hostname, port: Number(target.port || 6379) })
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once("error", () => done(false))
    socket.once("connect", () => socket.write("PING\r\n"))
    socket.once("data", (data) => done(data.toString().startsWith("+PONG")))
  })

const startRedis = async (): Promise<{ url: string; child: ChildProcess } | string> => {
  let binary: string
  try {
    binary = execFileSync("sh", ["-c", "command -v redis-server"]).toString().trim()
  } catch {
    return "redis-server is not on PATH and REDIS_URL is not set"
  }
  const port = await Effect.runPromise(freePort)
  const child = spawn(binary, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
    stdio: "ignore"
  })
  const url = `redis://127.0.0.1:${port}`
  for (let i = 0; i < 100; i++) {
    if (await redisPing(url, 200)) return { url, child }
    await new Promise((r) => setTimeout(r, 50))
  }
  child.kill("SIGKILL")
  return `redis-server did not answer on port ${port}`
}

const startS3rver = async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "bosun-test-s3-"))
  const port = await Effect.runPromise(freePort)
  const script = fileURLToPath(new URL("./S3ServerProcess.ts", import.meta.url))
  const child = spawn(process.execPath, ["--openssl-legacy-provider", script, String(port), dir, "bosun-test"], {
    stdio: ["ignore", "pipe", "inherit"]
  })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("s3rver did not start within 20 s")), 20_000)
    child.stdout?.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.once("exit", (code) => reject(new Error(`s3rver exited with ${code}`)))
  })
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: async () => {
      child.kill("SIGTERM")
      await fs.rm(dir, { recursive: true, force: true })
    }
  }
}

export default async function setup(project: TestProject) {
  const cleanups: Array<() => Promise<void>> = []

  const databaseUrl = process.env.DATABASE_URL
  if (databaseUrl) {
    provide(project, "bosun.pgAdminUrl", databaseUrl)
  } else {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "bosun-test-pg-"))
    await fs.chmod(dir, 0o711)
    const scope = Scope.makeUnsafe()
    const context = await Effect.runPromise(
      Layer.buildWithScope(
        EmbeddedPostgres.layer({
          dataDir: path.join(dir, "data"),
          password: Redacted.make(randomBytes(16).toString("hex"))
        }),
        scope
      )
    )
    const pg = Context.get(context, EmbeddedPostgres)
    provide(project, "bosun.pgAdminUrl", Redacted.value(pg.url))
    cleanups.push(async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await fs.rm(dir, { recursive: true, force: true })
    })
  }

  let redisUrl: string | null = process.env.REDIS_URL ?? null
  let redisMissing: string | null = null
  if (redisUrl && !(await redisPing(redisUrl))) {
    redisMissing = `REDIS_URL=${new URL(redisUrl).host} does not answer PING`
    redisUrl = null
  } else if (!redisUrl) {
    const started = await startRedis()
    if (typeof started === "string") {
      redisMissing = started
    } else {
      redisUrl = started.url
      cleanups.push(async () => {
        started.child.kill("SIGTERM")
      })
    }
  }
  if (redisMissing !== null) {
    if (inCi) throw new Error(`CI needs Redis: ${redisMissing}`)
    process.stderr.write(`[bosun tests] Redis tests will be skipped: ${redisMissing}\n`)
  }
  provide(project, "bosun.redisUrl", redisUrl)
  provide(project, "bosun.redisMissing", redisMissing)

  const s3 = await startS3rver()
  provide(project, "bosun.s3Endpoint", s3.endpoint)
  cleanups.push(s3.stop)

  return async () => {
    for (const cleanup of cleanups.reverse()) await cleanup()
  }
}
