/**
 * Choosing the agent's model from the catalog discovered for the credentials in force: a select
 * grouped by provider that shows each model's capabilities and context window, the model's
 * variants, and a reasoning effort only for a model that reasons. With no model chosen Bosun
 * uses its default pick (`defaultModel`), which is named here so nobody has to guess it.
 */
import { type AgentCatalog, type CatalogModel, defaultModel, modelInForce, ReasoningEffortSetting } from "@bosun/domain"
import { useId } from "react"
import { labelOf, reasoningEffortLabel } from "../labels.ts"
import { orgPath } from "../routes.ts"
import { Link } from "../ui.tsx"

export type ModelFields = { readonly model: string; readonly model_variant: string; readonly reasoning_effort: string }

const tokens = (count: number) =>
  count >= 1_000_000 ? `${count / 1_000_000}M` : count >= 1000 ? `${Math.round(count / 1000)}k` : String(count)

/** One line: what the model can do and how much it reads. */
export const capabilitiesOf = (model: CatalogModel) => {
  const { capabilities, limits } = model
  const can = [
    capabilities.tool_call ? "tool calls" : "no tool calls",
    ...(capabilities.reasoning ? ["reasoning"] : []),
    ...(capabilities.attachment ? ["attachments"] : []),
    ...(capabilities.temperature ? ["temperature"] : [])
  ]
  const context = limits.context === 0 ? "context not stated" : `${tokens(limits.context)} context`
  return `${can.join(", ")} · ${context}`
}

/** The fields after choosing `model`: a variant the new model does not have is dropped. */
export const withModel = (catalog: AgentCatalog | null, fields: ModelFields, model: string): ModelFields => {
  const entry = catalog === null ? null : (modelInForce(catalog, model)?.model ?? null)
  const keepsVariant = entry === null || fields.model_variant === "" || entry.variants.includes(fields.model_variant)
  return { ...fields, model, model_variant: keepsVariant ? fields.model_variant : "" }
}

export const ModelPicker = (props: {
  readonly org: string
  readonly level: "organization" | "repository"
  readonly catalog: AgentCatalog | null
  /** Why there is no catalog to pick from (it is loading, or failed to load). */
  readonly catalogProblem: string | null
  readonly fields: ModelFields
  readonly onChange: (fields: ModelFields) => void
}) => {
  const { catalog, fields } = props
  // Named by their labels alone: a select inside its label would add its chosen option to its name.
  const ids = useId()
  const providers = catalog?.providers.filter((provider) => provider.models.length > 0) ?? []
  const fallback = catalog === null ? null : defaultModel(catalog)
  const entry = catalog === null ? null : (modelInForce(catalog, fields.model)?.model ?? null)
  const listed = providers.some((provider) =>
    provider.models.some((model) => `${provider.id}/${model.id}` === fields.model)
  )
  const defaultText =
    fallback !== null
      ? fallback.id
      : catalog === null && props.catalogProblem === null
        ? "reading the catalog…"
        : "none yet: no model catalog"
  const variants = entry?.variants ?? []
  // Without a catalog entry nothing says the model does not reason: the effort stays editable.
  const reasons = entry === null ? true : entry.capabilities.reasoning

  return (
    <>
      <label className="field">
        <span id={`${ids}-model`}>Model</span>
        <select
          aria-labelledby={`${ids}-model`}
          value={fields.model}
          onChange={(event) => props.onChange(withModel(catalog, fields, event.target.value))}
        >
          <option value="">
            {props.level === "organization"
              ? `Use Bosun's default (${defaultText})`
              : `Not set here: the organization's model, else Bosun's default (${defaultText})`}
          </option>
          {fields.model === "" || listed ? null : (
            <option value={fields.model}>{fields.model} (not in the catalog)</option>
          )}
          {providers.map((provider) => (
            <optgroup key={provider.id} label={provider.name === "" ? provider.id : provider.name}>
              {provider.models.map((model) => (
                <option key={model.id} value={`${provider.id}/${model.id}`}>
                  {provider.id}/{model.id}
                  {model.name === "" || model.name === model.id ? "" : ` (${model.name})`} — {capabilitiesOf(model)}
                </option>
              ))}
            </optgroup>
          ))}
        </select>
      </label>
      <p className="muted" data-testid="model-default">
        Default: {defaultText}
        {entry === null ? null : (
          <>
            {" "}
            · In use: {fields.model === "" ? defaultText : fields.model} ({capabilitiesOf(entry)}
            {entry.limits.output === 0 ? "" : `, ${tokens(entry.limits.output)} output`})
          </>
        )}
      </p>
      {props.catalogProblem !== null ? (
        <p className="muted">The model catalog could not be read: {props.catalogProblem}</p>
      ) : catalog !== null && providers.length === 0 ? (
        <p className="muted">
          No model catalog has been discovered yet. Set the agent's credentials under{" "}
          <Link href={orgPath(props.org, "agent")}>Agent connection</Link>; choosing a model needs the catalog they
          discover.
        </p>
      ) : null}
      {variants.length === 0 && fields.model_variant === "" ? null : (
        <label className="field">
          <span id={`${ids}-variant`}>Model variant</span>
          <select
            aria-labelledby={`${ids}-variant`}
            value={fields.model_variant}
            onChange={(event) => props.onChange({ ...fields, model_variant: event.target.value })}
          >
            <option value="">The model's default</option>
            {fields.model_variant === "" || variants.includes(fields.model_variant) ? null : (
              <option value={fields.model_variant}>{fields.model_variant} (not a variant of this model)</option>
            )}
            {variants.map((variant) => (
              <option key={variant} value={variant}>
                {variant}
              </option>
            ))}
          </select>
        </label>
      )}
      {reasons ? (
        <label className="field">
          <span id={`${ids}-effort`}>Reasoning effort</span>
          <select
            aria-labelledby={`${ids}-effort`}
            value={fields.reasoning_effort}
            onChange={(event) => props.onChange({ ...fields, reasoning_effort: event.target.value })}
          >
            {ReasoningEffortSetting.literals.some((level) => level === fields.reasoning_effort) ? null : (
              <option value={fields.reasoning_effort}>{fields.reasoning_effort}</option>
            )}
            {ReasoningEffortSetting.literals.map((level) => (
              <option key={level} value={level}>
                {labelOf(reasoningEffortLabel, level)}
              </option>
            ))}
          </select>
        </label>
      ) : null}
    </>
  )
}
