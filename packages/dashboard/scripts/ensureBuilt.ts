/**
 * `npm start`'s first step: builds the dashboard when `dist/` is missing or older than its
 * sources, so the README's start command serves the dashboard on a fresh checkout without a
 * separate `npm run build`.
 */
import { existsSync, readdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { build } from "vite"

const root = join(import.meta.dirname, "..")
const built = join(root, "dist", "index.html")

const newest = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((latest, entry) => {
    const path = join(dir, entry.name)
    return Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs)
  }, 0)

const sources = Math.max(newest(join(root, "src")), statSync(join(root, "index.html")).mtimeMs)
if (!existsSync(built) || statSync(built).mtimeMs < sources) {
  console.log("building the dashboard (packages/dashboard/dist)")
  await build({ root, configFile: join(root, "vite.config.ts"), logLevel: "warn" })
}
