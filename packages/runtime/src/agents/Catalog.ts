/**
 * The CATALOG task (protocol 1.1; issue 7: catalog discovery): instead of working on a prompt, the
 * agent CLI lists the providers and models it can use with the request's credentials, and the
 * adapter leaves them, in the catalog's shape, at `outputs/catalog.json` — where the control
 * plane's catalog_discovery workflow reads them when the run has succeeded. Each CLI's listing is
 * parsed by its own adapter; this module holds what they share.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { AgentCatalog, CatalogOutput } from "@bosun/domain"
import manifest from "../../package.json" with { type: "json" }
import type { AgentContext, AgentOutcome } from "./Agent.ts"
import type { AgentExit } from "./AgentProcess.ts"

/** The runtime's own version, recorded in every catalog it produces. */
export const RUNTIME_VERSION = `bosun-runtime ${manifest.version}`

const NO_USAGE = { input_tokens: 0, output_tokens: 0, cost_usd: null }

export const integerOr0 = (value: unknown) =>
  typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : 0

/**
 * Ends a listing: a CLI that failed is reported with its exit; a listing that cannot be read fails
 * the run with `catalog_unreadable`; otherwise the catalog is written and the run succeeds.
 */
export const finishCatalog = (
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
  fs.writeFileSync(path.join(context.outputDir, "catalog.json"), `${JSON.stringify(output, null, 2)}\n`)
  context.emit("agent.event", {
    type: "catalog",
    providers: providers.map((provider) => ({ id: provider.id, models: provider.models.length }))
  })
  return { ...exit, usage: NO_USAGE }
}
