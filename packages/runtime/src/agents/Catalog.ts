/**
 * The CATALOG task (protocol 1.1): instead of working on a prompt, the agent CLI lists the
 * providers and models it can use with the request's credentials, and the adapter leaves them, in
 * the catalog's shape, at `outputs/catalog.json` — where the control plane's catalog_discovery
 * workflow reads them when the run has succeeded. Each CLI's listing is parsed by its own adapter;
 * this module holds what they share.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { AgentCatalog, CatalogOutput } from "@bosun/domain"
import { Effect } from "effect"
import manifest from "../../package.json" with { type: "json" }
import type { AgentContext, AgentOutcome } from "./Agent.ts"
import { type AgentExit, runAgentProcess } from "./AgentProcess.ts"

/** The runtime's own version, recorded in every catalog it produces. */
export const RUNTIME_VERSION = `bosun-runtime ${manifest.version}`

const NO_USAGE = { input_tokens: 0, output_tokens: 0, cost_usd: null }

export const integerOr0 = (value: unknown) =>
  typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : 0

/**
 * Ends a listing: a CLI that failed is reported with its exit; a listing that cannot be read fails
 * the run with `catalog_unreadable`; otherwise the catalog is written and the run succeeds.
 */
const finishCatalog = (
  context: AgentContext,
  exit: AgentExit,
  listing: () => AgentCatalog["providers"] | string,
  providerVersion: string
): AgentOutcome => {
  if (exit.exitCode !== 0) return { ...exit, usage: NO_USAGE }
  const providers = listing()
  if (typeof providers === "string") {
    return { ...exit, usage: NO_USAGE, error: { code: "catalog_unreadable", message: providers } }
  }
  const output: CatalogOutput = {
    catalog: { providers, runtime_version: RUNTIME_VERSION },
    provider_version: providerVersion
  }
  // The output directory was the agent's: whatever it left at this name (a link to a file of the
  // runtime's, say) is removed, and the file is created anew, never written through a link.
  const file = path.join(context.outputDir, "catalog.json")
  fs.rmSync(file, { force: true, recursive: true })
  fs.writeFileSync(file, `${JSON.stringify(output, null, 2)}\n`, { flag: "wx" })
  context.emit("agent.event", {
    type: "catalog",
    providers: providers.map((provider) => ({ id: provider.id, models: provider.models.length }))
  })
  return { ...exit, usage: NO_USAGE }
}

/**
 * Runs a CLI's listing command to the end, collecting everything it prints, and ends the run
 * with `listing`'s reading of that output (the catalog, or why it cannot be read).
 */
export const runListing = (
  context: AgentContext,
  command: { readonly binary: string; readonly args: ReadonlyArray<string>; readonly env: Record<string, string> },
  listing: (output: string) => AgentCatalog["providers"] | string,
  providerVersion: string
): Effect.Effect<AgentOutcome> => {
  const lines: Array<string> = []
  return runAgentProcess({
    command: command.binary,
    args: command.args,
    cwd: context.workspace,
    env: command.env,
    grace: context.grace,
    onSpawn: context.onSpawn,
    runAs: context.runAs,
    onJson: (value) => lines.push(JSON.stringify(value)),
    onText: (line) => lines.push(line)
  }).pipe(Effect.map((exit) => finishCatalog(context, exit, () => listing(`${lines.join("\n")}\n`), providerVersion)))
}
