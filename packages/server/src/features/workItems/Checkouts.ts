/**
 * How runs check repositories out: the clone URL of a repository on the configured GitHub, and the
 * read-only checkouts of a repository's approved secondary repositories
 * (`secondary_repository_ids`), which reviews and agent runs get beside their primary checkout,
 * with a line telling the agent they are there.
 *
 * A secondary repository that is gone, unavailable, or that the App cannot get a token for is
 * left out (and logged) rather than failing the run: it is context, not the work.
 */
import type { Repository, RunRepository } from "@bosun/domain"
import { Effect, Option, Redacted } from "effect"
import { GitHubApp } from "../../outbound/github/GitHubApp.ts"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { RepositoriesRepo } from "../repositories/index.ts"

/** The clone URL of a repository on the GitHub that `apiUrl` serves (github.com or Enterprise's `/api/v3`). */
export const cloneUrl = (apiUrl: URL, owner: string, name: string): string => {
  const web =
    apiUrl.hostname === "api.github.com"
      ? "https://github.com"
      : `${apiUrl.origin}${apiUrl.pathname.replace(/\/api\/v3\/?$/, "").replace(/\/$/, "")}`
  return `${web}/${owner}/${name}.git`
}

/** Where a secondary repository is checked out: `context-<name>`, made unique among `taken`. */
export const contextPath = (name: string, taken: ReadonlySet<string>): string => {
  const base = `context-${name.replace(/[^A-Za-z0-9._-]/g, "-")}`.slice(0, 90)
  let candidate = base
  for (let n = 2; taken.has(candidate); n++) candidate = `${base}-${n}`
  return candidate
}

export interface SecondaryCheckouts {
  readonly repositories: ReadonlyArray<RunRepository>
  /** What the agent is told about them; null when there are none. */
  readonly note: string | null
}

export const makeSecondaryCheckouts = Effect.gen(function* () {
  const config = yield* AppConfig
  const repositories = yield* RepositoriesRepo
  const app = yield* GitHubApp

  /** The read-only checkouts of `ids` (default branches), beside checkouts at `taken` paths. */
  const secondaryCheckouts = Effect.fn("SecondaryCheckouts.of")(function* (
    organizationId: string,
    ids: ReadonlyArray<string>,
    taken: ReadonlyArray<string>
  ) {
    const paths = new Set(taken)
    const checkouts: Array<{ readonly repository: Repository; readonly checkout: RunRepository }> = []
    for (const id of ids) {
      const found = yield* repositories.find(organizationId, id)
      if (Option.isNone(found) || !found.value.available) {
        yield* Effect.logWarning("secondary_repository_skipped").pipe(
          Effect.annotateLogs({ org_id: organizationId, repository_id: id, reason: "not available" })
        )
        continue
      }
      const repository = found.value
      const token = yield* app
        .installationToken(organizationId, { owner: repository.owner, name: repository.name })
        .pipe(Effect.option)
      if (Option.isNone(token)) {
        yield* Effect.logWarning("secondary_repository_skipped").pipe(
          Effect.annotateLogs({ org_id: organizationId, repository_id: id, reason: "no installation token" })
        )
        continue
      }
      const path = contextPath(repository.name, paths)
      paths.add(path)
      checkouts.push({
        repository,
        checkout: {
          id: repository.id,
          url: cloneUrl(config.githubApiUrl, repository.owner, repository.name),
          ref: repository.default_branch,
          path,
          credential: Redacted.value(token.value),
          read_only: true
        }
      })
    }
    const note =
      checkouts.length === 0
        ? null
        : `For context, these repositories this one depends on are checked out read-only beside it (their default branches); read them to understand how the code here uses them, but do not change them:\n${checkouts
            .map(({ repository, checkout }) => `- ./${checkout.path}: ${repository.owner}/${repository.name}`)
            .join("\n")}`
    return { repositories: checkouts.map((entry) => entry.checkout), note } satisfies SecondaryCheckouts
  })

  return { secondaryCheckouts }
})
