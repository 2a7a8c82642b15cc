/**
 * What every benchmark records beside its figures, and where: the machine it ran on, the Node
 * version and the date, written to `.bench/<name>.json` (git-ignored).
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export const benchRoot = fileURLToPath(new URL("..", import.meta.url))

export const runContext = (benchmark: string) => ({
  benchmark,
  date: new Date().toISOString(),
  machine: {
    cpus: os.cpus().length,
    cpu: os.cpus()[0]?.model ?? "unknown",
    memoryGb: Math.round(os.totalmem() / 2 ** 30)
  },
  node: process.version
})

export const writeReport = async (name: string, report: unknown) => {
  await fs.mkdir(path.join(benchRoot, ".bench"), { recursive: true })
  await fs.writeFile(path.join(benchRoot, `.bench/${name}.json`), `${JSON.stringify(report, null, 2)}\n`)
}
