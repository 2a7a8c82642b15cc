/**
 * `npm run bench:http`: loads `GET /healthz` and `GET /api/v1/instance` of a real Bosun server
 * process and of a bare `node:http` server in the same run, with autocannon for a fixed time,
 * and prints requests/s, p50/p99 latency and each server's idle and peak RSS, with Bosun's
 * throughput as a ratio of the bare server's. Then both serve the same fixed request rate and
 * their CPU microseconds per request are compared, a figure less swayed by the load generator
 * sharing the cores. Writes the figures to `.bench/http.json`.
 *
 * Bosun runs exactly as `npm start` runs it: on `DATABASE_URL` when set, else on its embedded
 * Postgres in a temporary data directory; its JSON request log goes to /dev/null.
 * Settings: BENCH_DURATION seconds per target (default 10), BENCH_CONNECTIONS (default 32).
 */

import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import autocannon from "autocannon"
import { runContext, writeReport } from "./Report.ts"
import { SERVER_NODE_FLAGS } from "./ServerFlags.ts"

const duration = Number(process.env.BENCH_DURATION ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32)
const root = fileURLToPath(new URL("..", import.meta.url))

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const waitFor = async (url: string, deadlineMs = 60_000) => {
  const until = Date.now() + deadlineMs
  while (Date.now() < until) {
    const ok = await fetch(url).then(
      (r) => r.status === 200,
      () => false
    )
    if (ok) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${url} did not answer 200 within ${deadlineMs} ms`)
}

/** Resident and peak resident set size of a process, in MB, from /proc. */
const memory = async (pid: number) => {
  const status = await fs.readFile(`/proc/${pid}/status`, "utf8")
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
  return { rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024 }
}

interface Figures {
  readonly requestsPerSec: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly errors: number
  readonly non2xx: number
}

const load = async (url: string, seconds: number): Promise<Figures> => {
  const result = await autocannon({ url, connections, duration: seconds, pipelining: 1 })
  return {
    requestsPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx
  }
}

/** CPU time (user + system) a process has used so far, in microseconds, from /proc. */
const cpuMicros = async (pid: number) => {
  const stat = await fs.readFile(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  const ticks = Number(fields[11]) + Number(fields[12])
  return (ticks / 100) * 1_000_000
}

/**
 * CPU microseconds per request at a fixed request rate: steadier than the open-loop ratio on a
 * shared 2-core machine, where the load generator and the server compete for the cores.
 */
const cpuPerRequest = async (url: string, pid: number, rate: number, seconds: number) => {
  const before = await cpuMicros(pid)
  const result = await autocannon({ url, connections, duration: seconds, pipelining: 1, overallRate: rate })
  const after = await cpuMicros(pid)
  return result.requests.total === 0 ? 0 : (after - before) / result.requests.total
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

const main = async () => {
  const barePort = await freePort()
  const bosunPort = await freePort()
  const runnerPort = await freePort()
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "bosun-bench-"))
  await fs.chmod(dataDir, 0o711)
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BOSUN_PORT: String(bosunPort),
    BOSUN_DATA_DIR: dataDir,
    BOSUN_EMBEDDED_RUNTIME_PORT: "0",
    BOSUN_RUNNER_PORT: String(runnerPort)
  }
  if (env.DATABASE_URL && !env.BOSUN_MASTER_KEY) env.BOSUN_MASTER_KEY = randomBytes(32).toString("base64")

  const bare = spawn(process.execPath, [path.join(root, "bench/bare-server.ts"), String(barePort)], { stdio: "ignore" })
  const bosun = spawn(process.execPath, [...SERVER_NODE_FLAGS, path.join(root, "packages/server/src/main.ts")], {
    env,
    stdio: ["ignore", "ignore", "inherit"]
  })
  try {
    await waitFor(`http://127.0.0.1:${barePort}/healthz`)
    await waitFor(`http://127.0.0.1:${bosunPort}/readyz`)
    const idle = { bare: await memory(bare.pid ?? 0), bosun: await memory(bosun.pid ?? 0) }

    const targets = [
      ["healthz", "/healthz"],
      ["api_v1_instance", "/api/v1/instance"]
    ] as const
    const results: Record<
      string,
      {
        bare: Figures
        bosun: Figures
        ratio: number
        fixedRate: { requestsPerSec: number; bareCpuMicrosPerRequest: number; bosunCpuMicrosPerRequest: number }
      }
    > = {}
    for (const [name, route] of targets) {
      await load(`http://127.0.0.1:${barePort}${route}`, 2)
      await load(`http://127.0.0.1:${bosunPort}${route}`, 2)
      const bareFigures = await load(`http://127.0.0.1:${barePort}${route}`, duration)
      const bosunFigures = await load(`http://127.0.0.1:${bosunPort}${route}`, duration)
      // Both servers at the same fixed rate, well below the slower one's saturation.
      const rate = Math.max(1000, Math.round(Math.min(bareFigures.requestsPerSec, bosunFigures.requestsPerSec) * 0.5))
      const bareCpu = await cpuPerRequest(`http://127.0.0.1:${barePort}${route}`, bare.pid ?? 0, rate, 6)
      const bosunCpu = await cpuPerRequest(`http://127.0.0.1:${bosunPort}${route}`, bosun.pid ?? 0, rate, 6)
      results[name] = {
        bare: bareFigures,
        bosun: bosunFigures,
        ratio: bosunFigures.requestsPerSec / bareFigures.requestsPerSec,
        fixedRate: { requestsPerSec: rate, bareCpuMicrosPerRequest: bareCpu, bosunCpuMicrosPerRequest: bosunCpu }
      }
    }
    const peak = { bare: await memory(bare.pid ?? 0), bosun: await memory(bosun.pid ?? 0) }

    const report = {
      ...runContext("http"),
      database: process.env.DATABASE_URL ? "DATABASE_URL" : "embedded",
      durationSeconds: duration,
      connections,
      results,
      memory: {
        bare: { idleRssMb: idle.bare.rssMb, peakRssMb: peak.bare.peakMb },
        bosun: { idleRssMb: idle.bosun.rssMb, peakRssMb: peak.bosun.peakMb }
      }
    }
    await writeReport("http", report)

    const fmt = (n: number, digits = 0) => n.toFixed(digits).padStart(9)
    console.log(
      `bench:http — ${duration}s per target, ${connections} connections, ${report.machine.cpus}× ${report.machine.cpu}`
    )
    console.log(
      `${"target".padEnd(28)}${"req/s".padStart(9)}${"p50 ms".padStart(9)}${"p99 ms".padStart(9)}${"errors".padStart(9)}`
    )
    for (const [name, r] of Object.entries(results)) {
      for (const [who, f] of [
        ["bare node:http", r.bare],
        ["bosun", r.bosun]
      ] as const) {
        console.log(
          `${`${name} (${who})`.padEnd(28)}${fmt(f.requestsPerSec)}${fmt(f.p50Ms, 1)}${fmt(f.p99Ms, 1)}${fmt(f.errors + f.non2xx)}`
        )
      }
      console.log(`${`${name}: bosun / bare`.padEnd(28)}${fmt(r.ratio * 100, 1)} %`)
      console.log(
        `${`${name}: CPU µs/request`.padEnd(28)} bare ${r.fixedRate.bareCpuMicrosPerRequest.toFixed(1)}, bosun ${r.fixedRate.bosunCpuMicrosPerRequest.toFixed(1)} at ${r.fixedRate.requestsPerSec} req/s (bare / bosun ${((r.fixedRate.bareCpuMicrosPerRequest / r.fixedRate.bosunCpuMicrosPerRequest) * 100).toFixed(1)} %)`
      )
    }
    console.log(
      `RSS MB idle/peak — bare: ${idle.bare.rssMb.toFixed(0)}/${peak.bare.peakMb.toFixed(0)}, bosun: ${idle.bosun.rssMb.toFixed(0)}/${peak.bosun.peakMb.toFixed(0)}`
    )
    console.log("figures written to .bench/http.json")
  } finally {
    await Promise.all([stop(bare), stop(bosun)])
    await fs.rm(dataDir, { recursive: true, force: true })
  }
}

await main()
