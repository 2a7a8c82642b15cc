/**
 * Context discovery during a review: after a review is recorded, Bosun reads the primary
 * repository's package.json and .gitmodules at the reviewed head, the pull request's added lines,
 * title and description, learns which npm package each sibling repository of the organization
 * publishes (its package.json at its default branch, cached for an hour), and proposes each
 * dependency `DependencyDetection` finds as a PROPOSED suggestion — unless the repository is
 * already a secondary one, or this primary has a suggestion for it in any state (a rejection is
 * final). access_valid says whether the App installation lists it as available.
 */
import type { Repository } from "@bosun/domain"
import { Duration, Effect, Option } from "effect"
import { GitHubBranches } from "../../outbound/github/GitHubBranches.ts"
import { Cache } from "../../platform/storage/Cache.ts"
import { ConfigurationRepo } from "../agentConnections/index.ts"
import { RepositoriesRepo } from "../repositories/index.ts"
import type { ChangedFile } from "../reviews/index.ts"
import { ContextSuggestionsRepo } from "./ContextSuggestionsRepo.ts"
import { detectDependencies, packageNameOf } from "./DependencyDetection.ts"

const PACKAGE_NAME_TTL = Duration.hours(1)

/** Files whose added lines can import an npm package. */
const SCRIPT_FILE = /\.(?:[cm]?[jt]sx?|vue|svelte)$/i

export const makeContextDiscovery = Effect.gen(function* () {
  const repositories = yield* RepositoriesRepo
  const suggestions = yield* ContextSuggestionsRepo
  const configurations = yield* ConfigurationRepo
  const branches = yield* GitHubBranches
  const cache = yield* Cache

  const at = (organizationId: string, repository: Repository) => ({
    organizationId,
    repository: { owner: repository.owner, name: repository.name }
  })

  /** The package a repository's default branch publishes ("" cached for none). */
  const packageNameOfRepository = (organizationId: string, repository: Repository) =>
    cache
      .getOrLoad(
        `context:package-name:${repository.id}:${repository.default_branch}`,
        PACKAGE_NAME_TTL,
        Effect.map(
          branches.fileAt(at(organizationId, repository), "package.json", repository.default_branch),
          Option.match({ onNone: () => "", onSome: (text) => packageNameOf(text) ?? "" })
        )
      )
      .pipe(Effect.map((name) => (name === "" ? null : name)))

  /** Proposes the dependencies the review of `primary` at `headSha` shows; answers what was proposed. */
  const discover = Effect.fn("ContextDiscovery.discover")(function* (input: {
    readonly organizationId: string
    readonly primary: Repository
    readonly headSha: string
    readonly files: ReadonlyArray<ChangedFile>
    /** The pull request's title and description. */
    readonly pullRequestText: string
  }) {
    const { organizationId, primary } = input
    const manifest = Option.getOrNull(
      yield* branches.fileAt(at(organizationId, primary), "package.json", input.headSha)
    )
    const gitmodules = Option.getOrNull(
      yield* branches.fileAt(at(organizationId, primary), ".gitmodules", input.headSha)
    )
    const known = yield* repositories.list(organizationId)
    const others = known.filter((repository) => repository.id !== primary.id)
    // Sibling package names are needed only when something here could depend on an npm package.
    const npm = manifest !== null || input.files.some((file) => SCRIPT_FILE.test(file.path))
    const siblings = yield* Effect.forEach(
      others,
      (repository) =>
        Effect.map(
          npm && repository.available ? packageNameOfRepository(organizationId, repository) : Effect.succeed(null),
          (packageName) => ({ id: repository.id, owner: repository.owner, name: repository.name, packageName })
        ),
      { concurrency: 4 }
    )
    const detected = detectDependencies({
      primary,
      manifest,
      gitmodules,
      changedFiles: input.files.map((file) => ({ path: file.path, patch: file.patch ?? null })),
      pullRequestText: input.pullRequestText,
      siblings
    })
    if (detected.length === 0) return []
    const secondary = new Set((yield* configurations.effective(organizationId, primary.id)).secondary_repository_ids)
    const proposed = yield* Effect.forEach(detected, (dependency) => {
      if (dependency.secondaryRepositoryId !== null && secondary.has(dependency.secondaryRepositoryId)) {
        return Effect.succeed(Option.none())
      }
      const sibling = others.find((repository) => repository.id === dependency.secondaryRepositoryId)
      return suggestions.propose(organizationId, {
        primaryRepositoryId: primary.id,
        secondaryRepositoryId: dependency.secondaryRepositoryId,
        secondaryOwner: dependency.secondaryOwner,
        secondaryName: dependency.secondaryName,
        source: dependency.source,
        reason: dependency.reason,
        accessValid: sibling?.available ?? false
      })
    })
    return proposed.flatMap((suggestion) => (Option.isSome(suggestion) ? [suggestion.value] : []))
  })

  return { discover }
})
