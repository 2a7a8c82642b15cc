/**
 * How Bosun notices, while reviewing a pull request, that its repository depends on another
 * repository (docs/interface.md: Resources "Context suggestion"). Pure: the review's publish step
 * gathers the inputs (the primary's manifests at the head, the added lines of the changed files,
 * the sibling repositories of the installation with the npm package each publishes) and records
 * what this finds.
 *
 * Sources, strongest first (one suggestion per secondary repository, with the first reason):
 * - `package_dependency`: package.json depends on a package a sibling publishes (its package.json
 *   `name`);
 * - `git_submodule`: .gitmodules points at a repository of the same owner;
 * - `import`: an added line imports or requires a sibling's package (or a subpath of it);
 * - `file_reference`: an added line of an OpenAPI/JSON Schema/proto/YAML/JSON file, or a Go
 *   import, names `github.com/{owner}/{name}` of the same owner (a `$ref`, an `import`, a URL);
 * - `co_changed_pull_request`: the pull request's title or description refers to a pull request
 *   of a sibling (`owner/name#12`, or its URL) — the two are changed together.
 *
 * Only repositories of the primary's owner are proposed: a reference to someone else's
 * repository is a dependency on the world, not context the team keeps. One the installation does
 * not list is still proposed, with no id and access_valid false, so the team sees why Bosun
 * cannot read it.
 */

import { Option, Schema } from "effect"

/** A JSON object's fields; none for text that is not a JSON object. */
const objectOf = (text: string): Option.Option<Readonly<Record<string, unknown>>> =>
  Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown)))(text)

export interface Sibling {
  readonly id: string
  readonly owner: string
  readonly name: string
  /** The npm package its default branch's package.json names, if any. */
  readonly packageName: string | null
}

export interface ChangedFile {
  readonly path: string
  /** GitHub's unified patch of the file, when it has one. */
  readonly patch: string | null
}

export type SuggestionSource =
  | "package_dependency"
  | "git_submodule"
  | "import"
  | "file_reference"
  | "co_changed_pull_request"

export interface DetectedDependency {
  readonly secondaryRepositoryId: string | null
  readonly secondaryOwner: string
  readonly secondaryName: string
  readonly source: SuggestionSource
  readonly reason: string
}

const DEPENDENCY_FIELDS = ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"] as const

/** The package names a package.json depends on; none when it is not a JSON object. */
export const dependenciesOf = (manifest: string): ReadonlySet<string> => {
  const names = new Set<string>()
  const parsed = objectOf(manifest)
  if (Option.isNone(parsed)) return names
  for (const field of DEPENDENCY_FIELDS) {
    const entries = parsed.value[field]
    if (typeof entries === "object" && entries !== null) for (const name of Object.keys(entries)) names.add(name)
  }
  return names
}

/** The `name` a package.json gives its package. */
export const packageNameOf = (manifest: string): string | null => {
  const name = Option.getOrUndefined(objectOf(manifest))?.name
  return typeof name === "string" && name.length > 0 ? name : null
}

/** The lines a patch adds, without their `+`. */
const addedLines = (patch: string | null): ReadonlyArray<string> =>
  patch === null
    ? []
    : patch
        .split("\n")
        .filter((line) => line.startsWith("+") && !line.startsWith("+++"))
        .map((line) => line.slice(1))

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Whether `line` imports or requires `pkg` or a subpath of it (`import … from`, `require(…)`, `import(…)`). */
export const importsPackage = (line: string, pkg: string): boolean =>
  new RegExp(
    `(?:\\bfrom\\s*|\\brequire\\s*\\(\\s*|\\bimport\\s*\\(\\s*|^\\s*import\\s+)["'\`]${escapeRegExp(pkg)}(?:/[^"'\`]*)?["'\`]`
  ).test(line)

const SPEC_FILE = /\.(?:ya?ml|json|proto|go|mod|graphql|gql)$/i

/** `owner/name` pairs of GitHub URLs or Go-style module paths (`github.com/owner/name`) in `text`. */
const githubRepositoriesIn = (text: string): ReadonlyArray<{ readonly owner: string; readonly name: string }> =>
  [
    ...text.matchAll(
      /github\.com[/:]([A-Za-z0-9][A-Za-z0-9-]{0,38})\/([A-Za-z0-9._-]{1,100}?)(?:\.git)?(?=[/"'\s#?]|$)/g
    )
  ].map((match) => ({ owner: match[1] ?? "", name: match[2] ?? "" }))

export const detectDependencies = (input: {
  readonly primary: { readonly id: string; readonly owner: string; readonly name: string }
  readonly manifest: string | null
  readonly gitmodules: string | null
  readonly changedFiles: ReadonlyArray<ChangedFile>
  /** The pull request's title and description. */
  readonly pullRequestText?: string
  readonly siblings: ReadonlyArray<Sibling>
}): ReadonlyArray<DetectedDependency> => {
  const owner = input.primary.owner.toLowerCase()
  const found = new Map<string, DetectedDependency>()
  const key = (repositoryOwner: string, name: string) => `${repositoryOwner.toLowerCase()}/${name.toLowerCase()}`
  const isPrimary = (repositoryOwner: string, name: string) =>
    key(repositoryOwner, name) === key(input.primary.owner, input.primary.name)
  const siblingOf = (repositoryOwner: string, name: string) =>
    input.siblings.find((sibling) => key(sibling.owner, sibling.name) === key(repositoryOwner, name))
  const add = (repositoryOwner: string, name: string, source: SuggestionSource, reason: string) => {
    if (repositoryOwner.toLowerCase() !== owner || isPrimary(repositoryOwner, name)) return
    const at = key(repositoryOwner, name)
    if (found.has(at)) return
    const sibling = siblingOf(repositoryOwner, name)
    found.set(at, {
      secondaryRepositoryId: sibling?.id ?? null,
      secondaryOwner: sibling?.owner ?? repositoryOwner,
      secondaryName: sibling?.name ?? name,
      source,
      reason
    })
  }
  const publishers = input.siblings.filter(
    (sibling): sibling is Sibling & { readonly packageName: string } =>
      sibling.packageName !== null && !isPrimary(sibling.owner, sibling.name)
  )

  if (input.manifest !== null) {
    const dependencies = dependenciesOf(input.manifest)
    for (const sibling of publishers) {
      if (dependencies.has(sibling.packageName)) {
        add(
          sibling.owner,
          sibling.name,
          "package_dependency",
          `package.json depends on "${sibling.packageName}", which ${sibling.owner}/${sibling.name} publishes`
        )
      }
    }
  }
  if (input.gitmodules !== null) {
    for (const line of input.gitmodules.split("\n")) {
      if (!/^\s*url\s*=/.test(line)) continue
      for (const repository of githubRepositoriesIn(line)) {
        add(
          repository.owner,
          repository.name,
          "git_submodule",
          `.gitmodules includes ${repository.owner}/${repository.name} as a submodule`
        )
      }
    }
  }
  for (const file of input.changedFiles) {
    const lines = addedLines(file.patch)
    for (const sibling of publishers) {
      if (lines.some((line) => importsPackage(line, sibling.packageName))) {
        add(
          sibling.owner,
          sibling.name,
          "import",
          `${file.path} imports "${sibling.packageName}", which ${sibling.owner}/${sibling.name} publishes`
        )
      }
    }
    if (!SPEC_FILE.test(file.path)) continue
    for (const line of lines) {
      for (const repository of githubRepositoriesIn(line)) {
        add(
          repository.owner,
          repository.name,
          "file_reference",
          `${file.path} refers to ${repository.owner}/${repository.name}`
        )
      }
    }
  }
  const linked = /(?:github\.com\/)?([A-Za-z0-9][A-Za-z0-9-]{0,38})\/([A-Za-z0-9._-]{1,100})(?:#|\/pull\/)(\d+)\b/g
  for (const match of (input.pullRequestText ?? "").matchAll(linked)) {
    const [, repositoryOwner = "", name = "", number = ""] = match
    if (siblingOf(repositoryOwner, name) === undefined) continue
    add(
      repositoryOwner,
      name,
      "co_changed_pull_request",
      `this pull request is changed together with ${repositoryOwner}/${name}#${number}`
    )
  }
  return [...found.values()]
}
