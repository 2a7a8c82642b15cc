/**
 * `infra/runtime.Dockerfile` (an image whose entrypoint is the runtime server as PID 1 running as
 * uid 1000, with git and the agent CLIs). No Docker engine runs here, so the file is checked as
 * text: the final stage's base image, user, entrypoint (exec form, so node is PID 1), the packages
 * it installs, and that every path it copies exists in the repository.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { copiedSources, readDockerfile, repositoryRoot as root } from "@bosun/testing"
import { describe, expect, it } from "@effect/vitest"

const { instructions, final } = readDockerfile("infra/runtime.Dockerfile")

describe("infra/runtime.Dockerfile", () => {
  it("builds the final image from Node 24 slim, runs as uid 1000, with node as PID 1 on the runtime's main", () => {
    expect(final[0]).toBe("FROM node:24-bookworm-slim")
    expect(final.filter((line) => line.startsWith("USER "))).toEqual(["USER 1000:1000"])
    expect(final.at(-1)).toBe('ENTRYPOINT ["node", "packages/runtime/src/main.ts"]')
    expect(final.some((line) => line.startsWith("CMD "))).toBe(false)
    expect(final).toContain("EXPOSE 8787")
  })

  it("installs git and ripgrep for the agents and no build tools", () => {
    const install = final.find((line) => line.includes("apt-get install")) ?? ""
    for (const tool of ["git", "ripgrep", "ca-certificates"]) expect(install).toContain(` ${tool}`)
    for (const buildTool of ["build-essential", "gcc", "g++", "make", "python3"]) {
      expect(install).not.toContain(` ${buildTool}`)
    }
    expect(install).toContain("--no-install-recommends")
  })

  it("installs only the runtime workspace's production dependencies, from the lockfile", () => {
    const npm = instructions.find((line) => line.startsWith("RUN npm ")) ?? ""
    expect(npm).toContain("npm ci --omit=dev")
    expect(npm).toContain("--workspace @bosun/runtime")
    const runtimePackage = JSON.parse(fs.readFileSync(path.join(root, "packages/runtime/package.json"), "utf8")) as {
      dependencies: Record<string, string>
    }
    expect(Object.keys(runtimePackage.dependencies)).toEqual(expect.arrayContaining(["opencode-ai", "@bosun/domain"]))
  })

  it("copies only paths that exist in the repository", () => {
    for (const source of copiedSources(instructions)) expect(fs.existsSync(path.join(root, source)), source).toBe(true)
  })
})
