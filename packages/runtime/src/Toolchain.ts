/**
 * The agent toolchain this runtime has (docs/interface.md: Agent runtime protocol, `GET /healthz`):
 * the versions of the OpenCode and Codex CLIs and of git, read once at start by running each with
 * `--version` (null where one is missing), and the custom agent profiles configured.
 */
import { execFile } from "node:child_process"
import { Context, Effect, Layer } from "effect"
import { findCodex } from "./agents/CodexAgent.ts"
import { findOpenCode } from "./agents/OpenCodeAgent.ts"
import { RuntimeConfig } from "./RuntimeConfig.ts"

const versionOf = (command: string) =>
  Effect.callback<string | null>((resume) => {
    const child = execFile(command, ["--version"], { timeout: 10_000 }, (error, stdout) =>
      resume(Effect.succeed(error === null ? (/\d+\.\d+(\.\d+)?\S*/.exec(stdout)?.[0] ?? stdout.trim()) : null))
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

export interface ToolchainProfile {
  readonly opencode: string | null
  readonly codex: string | null
  readonly git: string | null
  readonly custom_profiles: ReadonlyArray<string>
}

export class Toolchain extends Context.Service<Toolchain, { readonly profile: ToolchainProfile }>()(
  "bosun/runtime/Toolchain"
) {
  static readonly layer = Layer.effect(
    Toolchain,
    Effect.gen(function* () {
      const config = yield* RuntimeConfig
      // The same binaries the OpenCode and Codex adapters run: the runtime's own install, else PATH.
      const binaryVersion = (binary: string | undefined) =>
        binary === undefined ? Effect.succeed(null) : versionOf(binary)
      const [opencode, codex, git] = yield* Effect.all(
        [binaryVersion(findOpenCode()), binaryVersion(findCodex()), versionOf("git")],
        { concurrency: "unbounded" }
      )
      return Toolchain.of({
        profile: { opencode, codex, git, custom_profiles: [...config.profiles.keys()].sort() }
      })
    })
  )
}
