/**
 * What an agent run takes from configuration, decided in its prepare step: the model (the
 * configured one, checked against the catalog of the credentials in force, or Bosun's default
 * pick from that catalog — never a placeholder), the reasoning effort when the model reasons, the
 * MCP servers with their headers opened, the skills as SKILL.md files, and the team's own
 * instructions. A model that is no longer in the catalog fails the step with a message saying so,
 * before any sandbox starts.
 */
import { AttemptError } from "@bosun/actors/attempt/AttemptPorts"
import {
  describeUnknownModel,
  lookupModel,
  type McpServer,
  modelInForce,
  type RepositoryConfiguration,
  type Skill
} from "@bosun/domain"
import { Duration, Effect, Schedule } from "effect"
import { AgentConnectionsRepo } from "./AgentConnectionsRepo.ts"
import { ConfigurationRepo } from "./ConfigurationRepo.ts"

export interface RunSettings {
  readonly configuration: RepositoryConfiguration
  /** `provider/model` as the agent CLI names it. */
  readonly model: string
  readonly reasoningEffort: "low" | "medium" | "high" | undefined
  readonly mcpServers: ReadonlyArray<typeof McpServer.Type>
  readonly skills: ReadonlyArray<typeof Skill.Type>
}

const refuse = (code: string, message: string) => new AttemptError({ code, message, retryable: false })

/** A skill's SKILL.md: the agents load a skill by its front matter, so one is added when the text has none. */
export const skillFile = (skill: RepositoryConfiguration["skills"][number]): typeof Skill.Type => {
  if (skill.content.startsWith("---\n")) return { name: skill.name, content: skill.content }
  const description = (skill.description ?? `The ${skill.name} skill of this team`).replace(/\s+/g, " ").trim()
  return {
    name: skill.name,
    content: `---\nname: ${skill.name}\ndescription: ${JSON.stringify(description)}\n---\n\n${skill.content}`
  }
}

/** The team's own words for every agent run: its custom instructions and review guidance. */
export const teamInstructions = (configuration: RepositoryConfiguration): string | null => {
  const parts: Array<string> = []
  if (configuration.custom_instructions.trim() !== "") {
    parts.push(`Instructions from this team:\n${configuration.custom_instructions.trim()}`)
  }
  if (configuration.review_policy.guidance.trim() !== "") {
    parts.push(`Guidance for this repository:\n${configuration.review_policy.guidance.trim()}`)
  }
  return parts.length === 0 ? null : parts.join("\n\n")
}

/** How long a run waits for the first catalog of credentials whose discovery is under way. */
const FIRST_CATALOG_WAIT = Duration.minutes(2)

const discovering = (status: string | null) => status === "QUEUED" || status === "RUNNING"

/** `forRun`: the run settings of a repository (or the organization), or the attempt's failure. */
export const makeRunSettings = Effect.gen(function* () {
  const configurations = yield* ConfigurationRepo
  const connections = yield* AgentConnectionsRepo
  /**
   * `firstCatalogWait`: how long to wait for the first catalog of credentials whose discovery is
   * under way (a run's prepare step waits; an interactive test or doctor does not).
   */
  const forRun = Effect.fn("RunSettings.forRun")(function* (
    organizationId: string,
    repositoryId: string | null,
    firstCatalogWait: Duration.Duration = FIRST_CATALOG_WAIT
  ) {
    const configuration = yield* configurations.effective(organizationId, repositoryId)
    // Credentials connected moments ago: their first catalog is on its way (seconds), so a first
    // review waits for it rather than failing for good. A later discovery never holds a run up:
    // the last successful catalog stays in force meanwhile.
    const connection = yield* connections.view(organizationId, repositoryId).pipe(
      Effect.repeat({
        schedule: Schedule.spaced(Duration.seconds(1)),
        until: (view) => view.catalog.last_successful_at !== null || !discovering(view.catalog.status)
      }),
      Effect.timeoutOrElse({
        duration: firstCatalogWait,
        orElse: () => connections.view(organizationId, repositoryId)
      })
    )
    const discovered = connection.catalog.last_successful_at !== null
    const catalog = connection.catalog.catalog
    const scope = connection.auth.source_scope === "REPOSITORY" ? "repository's" : "organization's"
    if (configuration.model !== "" && discovered) {
      const found = lookupModel(catalog, configuration.model)
      if (found._tag !== "Found") {
        return yield* refuse(
          "model_unavailable",
          `The configured model is no longer offered by the ${scope} agent credentials: ${describeUnknownModel(configuration.model, found)}. Choose a model in the ${configuration.sources.agent === "REPOSITORY" ? "repository's" : "organization's"} settings`
        )
      }
    }
    if (configuration.model === "" && !discovered) {
      return yield* refuse(
        "model_catalog_unavailable",
        discovering(connection.catalog.status)
          ? `No model is configured and the model catalog of the ${scope} agent credentials is still being discovered: try again in a moment, or choose a model`
          : `No model is configured and no model catalog has been discovered for the ${scope} agent credentials: connect agent credentials (their catalog is discovered from them) or choose a model`
      )
    }
    const inForce = discovered ? modelInForce(catalog, configuration.model) : null
    if (configuration.model === "" && inForce === null) {
      return yield* refuse(
        "model_catalog_unavailable",
        `No model is configured and the catalog of the ${scope} agent credentials lists no models: choose a model in the settings`
      )
    }
    const model = inForce?.id ?? configuration.model
    // A model the catalog says does not reason is sent no effort; an unlisted one gets what is configured.
    const reasons = inForce?.model?.capabilities.reasoning ?? true
    const mcpServers = yield* configurations.mcpServersForRun(organizationId, repositoryId)
    return {
      configuration,
      model,
      reasoningEffort: reasons ? reasoningEffortOf(configuration.reasoning_effort) : undefined,
      mcpServers,
      skills: configuration.skills.map(skillFile)
    } satisfies RunSettings
  })
  return { forRun }
})

const reasoningEffortOf = (value: string): RunSettings["reasoningEffort"] =>
  value === "low" || value === "medium" || value === "high" ? value : undefined
