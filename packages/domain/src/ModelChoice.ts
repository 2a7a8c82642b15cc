/**
 * Choosing a model from an agent connection's discovered catalog: looking a configured
 * `provider/model` up (with close matches when it is not there) and, when no model is configured,
 * the default Bosun picks. Pure functions over the catalog; no I/O.
 *
 * The default rule (docs/configuration.md repeats it): among the catalog's models, prefer those
 * that call tools (an agent works through tools), then reasoning models, then the largest context
 * window, then the largest output limit, then the shortest id (a family's base model rather than a
 * variant such as `-mini`), then alphabetical order of `provider/model`. A provider listed without
 * models (Codex lists providers other than OpenAI that way: it takes any model name for them)
 * offers nothing to pick, and any model name for it is accepted.
 */
import type { AgentCatalog, CatalogModel } from "./runtime/Protocol.ts"

export type ModelLookup =
  | { readonly _tag: "Found"; readonly id: string; readonly model: CatalogModel | null }
  | { readonly _tag: "UnknownProvider"; readonly provider: string; readonly providers: ReadonlyArray<string> }
  | { readonly _tag: "UnknownModel"; readonly provider: string; readonly suggestions: ReadonlyArray<string> }

/** `provider/model` split at its first slash; the provider is empty when there is none. */
export const splitModelId = (id: string) => {
  const slash = id.indexOf("/")
  return slash > 0 ? { provider: id.slice(0, slash), model: id.slice(slash + 1) } : { provider: "", model: id }
}

const allIds = (catalog: AgentCatalog) =>
  catalog.providers.flatMap((provider) => provider.models.map((model) => `${provider.id}/${model.id}`))

const distance = (a: string, b: string): number => {
  const previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let diagonal = previous[0] ?? 0
    previous[0] = i
    for (let j = 1; j <= b.length; j++) {
      const above = previous[j] ?? 0
      previous[j] = Math.min(above + 1, (previous[j - 1] ?? 0) + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1))
      diagonal = above
    }
  }
  return previous[b.length] ?? 0
}

/** Up to `limit` of `candidates` close to `wanted`: containing it, or within a few edits. */
export const closeMatches = (wanted: string, candidates: ReadonlyArray<string>, limit = 5): ReadonlyArray<string> => {
  const needle = wanted.toLowerCase()
  const bare = splitModelId(needle).model
  const scored = candidates.map((candidate) => {
    const lower = candidate.toLowerCase()
    const own = splitModelId(lower).model
    const edits = Math.min(distance(needle, lower), distance(bare, own))
    const contains = bare.length >= 3 && (own.includes(bare) || bare.includes(own))
    return { candidate, score: contains ? Math.min(edits, 1) : edits }
  })
  const tolerance = Math.max(3, Math.floor(bare.length / 3))
  return scored
    .filter((entry) => entry.score <= tolerance)
    .sort((a, b) => a.score - b.score || a.candidate.localeCompare(b.candidate))
    .slice(0, limit)
    .map((entry) => entry.candidate)
}

/** Where `id` is in the catalog, or why it is not. */
export const lookupModel = (catalog: AgentCatalog, id: string): ModelLookup => {
  const { provider: providerId, model: modelId } = splitModelId(id)
  const provider = catalog.providers.find((p) => p.id === providerId)
  if (provider === undefined) {
    // A bare model name that one provider has is close to its full id.
    const suggestions = closeMatches(id, allIds(catalog))
    return providerId === ""
      ? { _tag: "UnknownModel", provider: "", suggestions }
      : { _tag: "UnknownProvider", provider: providerId, providers: catalog.providers.map((p) => p.id) }
  }
  if (provider.models.length === 0) return { _tag: "Found", id, model: null }
  const model = provider.models.find((m) => m.id === modelId)
  if (model !== undefined) return { _tag: "Found", id, model }
  return {
    _tag: "UnknownModel",
    provider: provider.id,
    suggestions: closeMatches(
      id,
      provider.models.map((m) => `${provider.id}/${m.id}`)
    )
  }
}

/** The model Bosun uses when none is configured (the rule in this module's header), or null for an empty catalog. */
export const defaultModel = (catalog: AgentCatalog): { readonly id: string; readonly model: CatalogModel } | null => {
  const candidates = catalog.providers.flatMap((provider) =>
    provider.models.map((model) => ({ id: `${provider.id}/${model.id}`, model }))
  )
  const flag = (value: boolean) => (value ? 1 : 0)
  const sorted = [...candidates].sort(
    (a, b) =>
      flag(b.model.capabilities.tool_call) - flag(a.model.capabilities.tool_call) ||
      flag(b.model.capabilities.reasoning) - flag(a.model.capabilities.reasoning) ||
      b.model.limits.context - a.model.limits.context ||
      b.model.limits.output - a.model.limits.output ||
      a.model.id.length - b.model.id.length ||
      a.id.localeCompare(b.id)
  )
  return sorted[0] ?? null
}

/**
 * The model a configuration runs with: the configured `provider/model` when the catalog lists it
 * (`model` null for a provider listed without models), else Bosun's default pick when none is
 * configured; null when neither applies.
 */
export const modelInForce = (
  catalog: AgentCatalog,
  configured: string
): { readonly id: string; readonly model: CatalogModel | null } | null => {
  if (configured === "") return defaultModel(catalog)
  const found = lookupModel(catalog, configured)
  return found._tag === "Found" ? { id: found.id, model: found.model } : null
}

/** One sentence for an unknown model: the provider it was looked for in and the close matches. */
export const describeUnknownModel = (id: string, lookup: Exclude<ModelLookup, { _tag: "Found" }>): string => {
  if (lookup._tag === "UnknownProvider") {
    return `The catalog has no provider "${lookup.provider}" (model "${id}"); its providers: ${
      lookup.providers.length === 0 ? "none" : lookup.providers.join(", ")
    }`
  }
  const where = lookup.provider === "" ? "any provider of the catalog" : `provider "${lookup.provider}"`
  const close = lookup.suggestions.length === 0 ? "no close matches" : `close matches: ${lookup.suggestions.join(", ")}`
  return `Model "${id}" is not in the catalog of ${where} (models are named provider/model); ${close}`
}
