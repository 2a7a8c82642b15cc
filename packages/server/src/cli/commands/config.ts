/**
 * `bosun config get|set|reset --org ORG [--repo OWNER/NAME]`: the configuration of an organization
 * or of one of its repositories, read in the API's read form and written through the
 * `ConfigurationWriter` as the operator — the API's checks and audit, and a refused write stores
 * nothing. The CLI is no cluster runner, so it does not wake the Scheduler: a catalog discovery a
 * write queued is started by a running server at its next tick.
 */
import {
  CONFIGURATION_GROUPS,
  type ConfigurationGroup,
  ConfigurationUpdate,
  DEFAULT_CONFIGURATION,
  PathId,
  type Repository,
  RepositoryConfiguration,
  ReviewPolicyUpdate
} from "@bosun/domain"
import { Console, Effect, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { type ConfigurationRefused, ConfigurationRepo } from "../../features/agentConnections/ConfigurationRepo.ts"
import { ConfigurationWriter } from "../../features/agentConnections/ConfigurationWriter.ts"
import { withModelInForce } from "../../features/agentConnections/ModelCheck.ts"
import { OrganizationsRepo } from "../../features/identity/OrganizationsRepo.ts"
import { RepositoriesRepo } from "../../features/repositories/RepositoriesRepo.ts"
import { issueLines } from "../../platform/http/SchemaIssues.ts"
import { CliFailure } from "../CliFailure.ts"

type ReadForm = typeof RepositoryConfiguration.Encoded

const POLICY = "review_policy."

/** Every field `get` lists, with the group whose source it shows, in group order. */
const LISTED: ReadonlyArray<readonly [field: string, group: ConfigurationGroup]> = CONFIGURATION_GROUPS.flatMap(
  (group) => {
    const fields =
      group === "review_policy"
        ? Object.keys(DEFAULT_CONFIGURATION.review_policy.review_policy).map((name) => `${POLICY}${name}`)
        : Object.keys(DEFAULT_CONFIGURATION[group])
    // `.bosun.yaml`'s path instructions are part of the instructions group, read-only here.
    return (group === "instructions" ? [...fields, "path_instructions"] : fields).map(
      (field) => [field, group] as const
    )
  }
)

const GROUP_OF = new Map<string, ConfigurationGroup>([...LISTED, ["review_policy", "review_policy"]])

/** `config_file` belongs to no group: it is the `.bosun.yaml` as last read. */
const READABLE = [...GROUP_OF.keys(), "config_file"].sort()

const WRITABLE = [
  ...Object.keys(ConfigurationUpdate.fields),
  ...Object.keys(ReviewPolicyUpdate.fields).map((name) => `${POLICY}${name}`)
].sort()

const RepositoryName = Schema.String.check(Schema.isPattern(/^[^/\s]+\/[^/\s]+$/, { message: "must be owner/name" }))

const org = Flag.String("org").pipe(Flag.withSchema(PathId), Flag.withDescription("The organization id"))

const repo = Flag.String("repo").pipe(
  Flag.withSchema(RepositoryName),
  Flag.optional,
  Flag.withDescription("A repository of the organization, as owner/name: its level instead of the organization's")
)

const json = Flag.Boolean("json").pipe(
  Flag.withDescription("Print JSON on stdout: the read form of the API's GET .../configuration (or one value of it)"),
  Flag.withDefault(false)
)

interface Level {
  readonly repositoryId: string | null
  readonly label: string
}

/** The organization's level, or its repository named owner/name (GitHub names ignore case). */
const resolveLevel = Effect.fnUntraced(function* (
  organizationId: string,
  repository: Option.Option<string>
): Effect.fn.Return<Level, CliFailure, OrganizationsRepo | RepositoriesRepo> {
  if (!(yield* (yield* OrganizationsRepo).exists(organizationId))) {
    return yield* new CliFailure({ message: `no organization has the id ${organizationId}` })
  }
  if (Option.isNone(repository)) return { repositoryId: null, label: `organization ${organizationId}` }
  const wanted = repository.value
  const all = yield* (yield* RepositoriesRepo).list(organizationId)
  const fullName = (r: Repository) => `${r.owner}/${r.name}`
  const exact = all.find((r) => fullName(r) === wanted)
  const folded = all.filter((r) => fullName(r).toLowerCase() === wanted.toLowerCase())
  const found = exact ?? (folded.length === 1 ? folded[0] : undefined)
  if (found === undefined) {
    return yield* new CliFailure({ message: `organization ${organizationId} has no repository ${wanted}` })
  }
  return { repositoryId: found.id, label: `repository ${fullName(found)} of organization ${organizationId}` }
})

/** The effective configuration as the API's `data` encodes it. */
const readForm = Effect.fnUntraced(function* (organizationId: string, level: Level) {
  const effective = yield* (yield* ConfigurationRepo).effective(organizationId, level.repositoryId)
  const configuration = yield* withModelInForce(organizationId, level.repositoryId, effective)
  return yield* Schema.encodeEffect(RepositoryConfiguration)(configuration).pipe(Effect.orDie)
})

const fieldValue = (data: ReadForm, field: string): unknown => {
  if (field.startsWith(POLICY)) {
    const policy: Record<string, unknown> = data.review_policy
    return policy[field.slice(POLICY.length)]
  }
  const all: Record<string, unknown> = data
  return all[field]
}

const sourceOf = (data: ReadForm, field: string): string | undefined => {
  const group = GROUP_OF.get(field)
  return group === undefined ? undefined : data.sources[group]
}

/** `field = value   (source)`; the value as JSON, which is also what `set` takes back. */
const line = (data: ReadForm, field: string): string => {
  const source = sourceOf(data, field)
  const shown = `${field} = ${JSON.stringify(fieldValue(data, field))}`
  return source === undefined ? shown : `${shown}   (${source})`
}

const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

const refusal = (refused: ConfigurationRefused) => new CliFailure({ message: `${refused.message} (${refused.code})` })

const DISCOVERY_QUEUED =
  "a catalog discovery of the agent connection was queued; a running server starts it within its Scheduler tick"

const decodeJson = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Unknown))
const decodeUpdate = Schema.decodeUnknownEffect(ConfigurationUpdate)

/** The one-field write body, the value as JSON when it parses, else as the string it is; and whether it is null. */
const patchOf = Effect.fnUntraced(function* (field: string, raw: string) {
  if (!WRITABLE.includes(field)) {
    return yield* new CliFailure({ message: `unknown field ${field}; the fields are ${WRITABLE.join(", ")}` })
  }
  const value = Option.getOrElse(decodeJson(raw), (): unknown => raw)
  const body = field.startsWith(POLICY)
    ? { review_policy: { [field.slice(POLICY.length)]: value } }
    : { [field]: value }
  const patch = yield* decodeUpdate(body, { onExcessProperty: "error" }).pipe(
    Effect.mapError((error) => {
      // Like the API's 400, the submitted value is never repeated: it may be a secret (MCP headers).
      const problems = issueLines(error.issue).map(({ path, message }) =>
        path.length === 0 ? message : `${path.join(".")}: ${message}`
      )
      return new CliFailure({ message: `invalid value for ${field}: ${problems.join("; ")}` })
    })
  )
  return { patch, inherit: value === null }
})

export const get = Command.make(
  "get",
  {
    org,
    repo,
    json,
    field: Argument.String("field").pipe(
      Argument.withDescription("One field (model, review_policy.strictness, …); without it, every field"),
      Argument.optional
    )
  },
  Effect.fn(function* ({ org, repo, json, field }) {
    const level = yield* resolveLevel(org, repo)
    if (Option.isSome(field) && !READABLE.includes(field.value)) {
      return yield* new CliFailure({ message: `unknown field ${field.value}; the fields are ${READABLE.join(", ")}` })
    }
    const data = yield* readForm(org, level)
    if (Option.isSome(field)) {
      const value = fieldValue(data, field.value)
      const source = sourceOf(data, field.value)
      return yield* json
        ? printJson(value)
        : Console.log(source === undefined ? JSON.stringify(value) : `${JSON.stringify(value)}   (${source})`)
    }
    if (json) return yield* printJson(data)
    for (const [name] of LISTED) yield* Console.log(line(data, name))
    if (level.repositoryId !== null) yield* Console.log(line(data, "config_file"))
  })
).pipe(Command.withDescription("Show the effective configuration and where each group's values come from"))

export const set = Command.make(
  "set",
  {
    org,
    repo,
    json,
    field: Argument.String("field").pipe(
      Argument.withDescription("The field to set (model, custom_instructions, review_policy.comment_limit, …)")
    ),
    value: Argument.String("value").pipe(
      Argument.withDescription('JSON (true, 3, ["a"], {"k":"v"}, null to inherit again), else taken as a string')
    )
  },
  Effect.fn(function* ({ org, repo, json, field, value }) {
    const level = yield* resolveLevel(org, repo)
    const { patch, inherit } = yield* patchOf(field, value)
    const queued = yield* (yield* ConfigurationWriter)
      .update(org, level.repositoryId, patch, { kind: "operator" })
      .pipe(Effect.mapError(refusal))
    const data = yield* readForm(org, level)
    if (json) yield* printJson(data)
    else {
      yield* Console.log(`${field} of ${level.label} ${inherit ? "inherits again" : "is set"}`)
      // What is in effect now, not the value given: that may hold a secret, and a file may override it.
      yield* Console.log(line(data, field))
    }
    if (queued) yield* Console.error(DISCOVERY_QUEUED)
  })
).pipe(Command.withDescription("Set one field at a level (null: inherit it again)"))

export const reset = Command.make(
  "reset",
  {
    org,
    repo,
    json,
    group: Argument.Literals("group", CONFIGURATION_GROUPS).pipe(
      Argument.withDescription("The group whose values this level drops")
    )
  },
  Effect.fn(function* ({ org, repo, json, group }) {
    const level = yield* resolveLevel(org, repo)
    const queued = yield* (yield* ConfigurationWriter).reset(org, level.repositoryId, group, { kind: "operator" })
    const data = yield* readForm(org, level)
    if (json) yield* printJson(data)
    else {
      yield* Console.log(`${group} of ${level.label} inherits again`)
      for (const [name, of] of LISTED) if (of === group) yield* Console.log(line(data, name))
    }
    if (queued) yield* Console.error(DISCOVERY_QUEUED)
  })
).pipe(Command.withDescription("Drop a level's values of one group so it inherits again"))
