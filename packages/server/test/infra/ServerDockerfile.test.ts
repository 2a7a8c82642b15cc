/**
 * `infra/server.Dockerfile` (multi-stage, Node 24, non-root, no build tools in the final image, the
 * dashboard bundled into the server image). No Docker engine runs here, so the file is checked as
 * text (`readDockerfile`): the final stage's base, user, entrypoint and port; that it installs no
 * build tools and runs no npm; that the dashboard is built in its own stage and only its `dist/`
 * shipped; that every workspace the server imports, and the migrations, are in the image; and that
 * every path copied from the build context exists.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { copiedSources, readDockerfile, repositoryRoot as root } from "@bosun/testing"
import { describe, expect, it } from "@effect/vitest"

const { instructions, stages, final } = readDockerfile("infra/server.Dockerfile")

const stageNamed = (name: string) => stages.find((stage) => stage[0]?.endsWith(` AS ${name}`)) ?? []

/** The `@bosun/*` workspaces `name` depends on, and theirs, as directories under packages/. */
const workspacesOf = (name: string, seen = new Set<string>()): Set<string> => {
  const manifest = JSON.parse(fs.readFileSync(path.join(root, "packages", name, "package.json"), "utf8")) as {
    dependencies?: Record<string, string>
  }
  for (const dependency of Object.keys(manifest.dependencies ?? {})) {
    if (!dependency.startsWith("@bosun/")) continue
    const directory = dependency.slice("@bosun/".length)
    if (seen.has(directory)) continue
    seen.add(directory)
    workspacesOf(directory, seen)
  }
  return seen
}

describe("infra/server.Dockerfile", () => {
  it("ships Node 24 slim as uid 1000 with node as PID 1 on the server's main, serving on 8080", () => {
    expect(final[0]).toBe("FROM node:24-bookworm-slim")
    expect(final.filter((line) => line.startsWith("USER "))).toEqual(["USER 1000:1000"])
    expect(final.at(-1)).toBe('ENTRYPOINT ["node", "--max-semi-space-size=16", "packages/server/src/main.ts"]')
    expect(final.some((line) => line.startsWith("CMD "))).toBe(false)
    expect(final).toContain("EXPOSE 8080 34431")
    const env = final.find((line) => line.startsWith("ENV ")) ?? ""
    for (const setting of [
      "NODE_ENV=production",
      "BOSUN_HOST=0.0.0.0",
      "BOSUN_PORT=8080",
      "BOSUN_RUNNER_LISTEN_HOST=0.0.0.0",
      "BOSUN_DATA_DIR=/data"
    ]) {
      expect(env).toContain(setting)
    }
    expect(final).toContain('VOLUME ["/data"]')
    expect(final.find((line) => line.startsWith("HEALTHCHECK ")) ?? "").toContain("http://127.0.0.1:8080/healthz")
  })

  it("installs git and ripgrep for the embedded runtime's agents, no build tools, and runs no npm in the final image", () => {
    const install = final.find((line) => line.includes("apt-get install")) ?? ""
    for (const tool of ["git", "ripgrep", "ca-certificates"]) expect(install).toContain(` ${tool}`)
    for (const buildTool of ["build-essential", "gcc", "g++", "make", "python3"]) {
      expect(install).not.toContain(` ${buildTool}`)
    }
    expect(install).toContain("--no-install-recommends")
    expect(install).toContain("chown 1000:1000 /data")
    // The operator CLI is on the PATH as `bosun`, for the runbooks in docs/.
    expect(install).toContain(`exec node /app/packages/server/src/cli/main.ts "$@"\\n' > /usr/local/bin/bosun`)
    expect(install).toContain("chmod 755 /usr/local/bin/bosun")
    expect(final.filter((line) => line.startsWith("RUN npm"))).toEqual([])
  })

  it("builds the dashboard in its own stage and ships only its dist/", () => {
    const dashboard = stageNamed("dashboard")
    expect(dashboard[0]).toBe("FROM node:24-bookworm-slim AS dashboard")
    expect(dashboard).toContain("RUN npm run build --workspace @bosun/dashboard")
    const shipped = final.filter((line) => line.includes("packages/dashboard"))
    expect(shipped).toEqual([
      "COPY --from=dashboard --chown=1000:1000 /app/packages/dashboard/dist packages/dashboard/dist"
    ])
  })

  it("installs the server workspace's production dependencies from the lockfile", () => {
    const deps = stageNamed("deps")
    const npm = deps.find((line) => line.startsWith("RUN npm ")) ?? ""
    expect(npm).toContain("npm ci --omit=dev")
    expect(npm).toContain("--workspace @bosun/server")
    expect(final).toContain("COPY --from=deps --chown=1000:1000 /app/node_modules ./node_modules")
  })

  it("ships the migrations and the source of every workspace the server imports", () => {
    const copied = new Set(copiedSources(final))
    expect(copied.has("sql")).toBe(true)
    const workspaces = [...workspacesOf("server"), "server"]
    expect(workspaces).toEqual(expect.arrayContaining(["domain", "actors", "runtime", "server"]))
    for (const workspace of workspaces) {
      expect(copied.has(`packages/${workspace}/package.json`), workspace).toBe(true)
      expect(copied.has(`packages/${workspace}/src`), workspace).toBe(true)
    }
  })

  it("copies only paths that exist in the repository, and the build context leaves local state out", () => {
    for (const source of copiedSources(instructions)) expect(fs.existsSync(path.join(root, source)), source).toBe(true)
    const ignored = fs.readFileSync(path.join(root, ".dockerignore"), "utf8").split("\n")
    for (const entry of ["**/node_modules", "**/dist", ".git", ".bosun"]) expect(ignored).toContain(entry)
  })
})
