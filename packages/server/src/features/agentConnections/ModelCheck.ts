/**
 * The model fields of a configuration write, checked against the catalog discovered for the
 * credentials in force at that level (the repository's own connection, else the
 * organization's): an unknown model, a variant the model does not have, or a reasoning effort for
 * a model that does not reason is refused; so is choosing a model before any catalog exists.
 * Only the fields the write names are checked, against the configuration the write leaves.
 */
import {
  type ConfigurationUpdate,
  defaultModel,
  describeUnknownModel,
  ErrorCodes,
  lookupModel,
  modelInForce,
  type RepositoryConfiguration
} from "@bosun/domain"
import { Effect } from "effect"
import { AgentConnectionsRepo } from "./AgentConnectionsRepo.ts"
import { ConfigurationRefused } from "./ConfigurationRepo.ts"

const refuse = (status: 400 | 409, code: string, message: string) => new ConfigurationRefused({ status, code, message })

const catalogMissing = (repositoryId: string | null) =>
  refuse(
    409,
    ErrorCodes.modelCatalogUnavailable,
    `No model catalog has been discovered for the agent credentials of this ${
      repositoryId === null ? "organization" : "repository"
    }: connect agent credentials first (the catalog is discovered from them), then choose a model`
  )

/** The read form with Bosun's default pick shown as the model in force when no model is set. */
export const withModelInForce = Effect.fnUntraced(function* (
  organizationId: string,
  repositoryId: string | null,
  configuration: RepositoryConfiguration
) {
  if (configuration.model_in_force !== null) return configuration
  const connection = yield* (yield* AgentConnectionsRepo).view(organizationId, repositoryId)
  if (connection.catalog.last_successful_at === null) return configuration
  const pick = defaultModel(connection.catalog.catalog)
  return pick === null
    ? configuration
    : { ...configuration, model_in_force: { id: pick.id, source: "DEFAULT" as const } }
})

export const checkModelFields = Effect.fnUntraced(function* (
  organizationId: string,
  repositoryId: string | null,
  patch: ConfigurationUpdate,
  after: RepositoryConfiguration
) {
  const names = (["model", "model_variant", "reasoning_effort"] as const).filter(
    (field) => patch[field] !== undefined && patch[field] !== null && patch[field] !== ""
  )
  if (names.length === 0) return
  const connection = yield* (yield* AgentConnectionsRepo).view(organizationId, repositoryId)
  const catalog = connection.catalog.catalog
  if (connection.catalog.last_successful_at === null) return yield* catalogMissing(repositoryId)
  const providerIds = catalog.providers.map((provider) => provider.id).join(", ") || "none"
  if (typeof patch.model === "string" && patch.model !== "") {
    const found = lookupModel(catalog, patch.model)
    if (found._tag !== "Found") {
      return yield* refuse(
        400,
        ErrorCodes.unknownModel,
        `Invalid body field "model": ${describeUnknownModel(patch.model, found)} (catalog providers: ${providerIds})`
      )
    }
  }
  const inForce = modelInForce(catalog, after.model)
  if (inForce === null || inForce.model === null) return
  const variants = inForce.model.variants
  const variantNamed = typeof patch.model_variant === "string" || typeof patch.model === "string"
  if (variantNamed && after.model_variant !== "" && !variants.includes(after.model_variant)) {
    return yield* refuse(
      400,
      ErrorCodes.unknownModelVariant,
      `Invalid body field "model_variant": model "${inForce.id}" has ${
        variants.length === 0 ? "no variants" : `the variants ${variants.join(", ")}`
      }, not "${after.model_variant}"${typeof patch.model_variant === "string" ? "" : " (set model_variant to null)"}`
    )
  }
  if (typeof patch.reasoning_effort === "string" && !inForce.model.capabilities.reasoning) {
    return yield* refuse(
      400,
      ErrorCodes.reasoningNotSupported,
      `Invalid body field "reasoning_effort": the catalog says model "${inForce.id}" does not reason, so it takes no reasoning effort`
    )
  }
})
