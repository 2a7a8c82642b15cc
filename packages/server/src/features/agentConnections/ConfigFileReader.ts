/**
 * Reads a repository's `.bosun.yaml` from its default branch — never a pull request's head, so a
 * fork cannot steer its own review — and records what it says (its settings, or why it is
 * ignored) where the effective configuration overlays it with source FILE. Reading it is the
 * review's prepare step's first act; an invalid file never stops the review.
 */
import { BOSUN_CONFIG_FILE, type Repository } from "@bosun/domain"
import { Effect, Option } from "effect"
import { GitHubBranches } from "../../outbound/github/GitHubBranches.ts"
import { describeInvalidConfig, parseBosunConfig } from "./BosunConfigFile.ts"
import { ConfigurationRepo } from "./ConfigurationRepo.ts"

export const makeConfigFileReader = Effect.gen(function* () {
  const branches = yield* GitHubBranches
  const configurations = yield* ConfigurationRepo

  /** Reads and records the file; answers the sentence for the review's summary when the file is ignored. */
  const refresh = Effect.fn("ConfigFile.refresh")(function* (organizationId: string, repository: Repository) {
    const at = { organizationId, repository: { owner: repository.owner, name: repository.name } }
    const text = yield* branches.fileAt(at, BOSUN_CONFIG_FILE, repository.default_branch)
    const parsed = Option.map(text, parseBosunConfig)
    const error = Option.isSome(parsed) && parsed.value._tag === "Invalid" ? describeInvalidConfig(parsed.value) : null
    yield* configurations.recordConfigFile(organizationId, repository.id, {
      path: BOSUN_CONFIG_FILE,
      ref: repository.default_branch,
      found: Option.isSome(text),
      settings: Option.isSome(parsed) && parsed.value._tag === "Valid" ? parsed.value.config : null,
      error
    })
    if (error !== null) {
      yield* Effect.logWarning("config_file_ignored").pipe(
        Effect.annotateLogs({ repository_id: repository.id, reason: error })
      )
    }
    return error
  })

  return { refresh }
})
