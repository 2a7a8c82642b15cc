/**
 * The agent of the fan-out run of `npm run bench:scheduler` (a CUSTOM runtime profile): prints
 * `{"type":"ready"}`, waits until the file `argv[2]` exists (the benchmark creates it once all its
 * SSE subscribers are live), then prints `argv[3]` tick events evenly over `argv[4]` seconds, each
 * carrying the wall-clock time it was printed at (`t`, epoch ms), and exits 0.
 */
import * as fs from "node:fs"

const [goFile = "", countArg = "0", secondsArg = "1"] = process.argv.slice(2)
const count = Number(countArg)
const intervalMs = (Number(secondsArg) * 1000) / Math.max(1, count)
const now = () => performance.timeOrigin + performance.now()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))

process.stdout.write(`${JSON.stringify({ type: "ready" })}\n`)
while (!fs.existsSync(goFile)) await sleep(5)

const start = now()
for (let n = 1; n <= count; n++) {
  await sleep(start + (n - 1) * intervalMs - now())
  process.stdout.write(`${JSON.stringify({ type: "tick", n, t: now() })}\n`)
}
