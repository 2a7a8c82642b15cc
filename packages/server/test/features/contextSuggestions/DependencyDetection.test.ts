/**
 * How a review notices a dependency on a sibling repository: package.json dependencies on a package
 * a sibling publishes, git submodules, imports in added lines, and references to a sibling's files
 * from OpenAPI/proto/YAML/Go files — of the primary's owner only, once per secondary repository.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import {
  dependenciesOf,
  detectDependencies,
  importsPackage,
  packageNameOf,
  type Sibling
} from "../../../src/features/contextSuggestions/DependencyDetection.ts"

const primary = { id: "r-web", owner: "acme", name: "web" }
const shared: Sibling = { id: "r-shared", owner: "acme", name: "shared", packageName: "@acme/shared" }
const api: Sibling = { id: "r-api", owner: "acme", name: "api", packageName: null }
const self: Sibling = { id: "r-web", owner: "acme", name: "web", packageName: "@acme/web" }

const patch = (...added: ReadonlyArray<string>) =>
  `@@ -0,0 +1,${added.length} @@\n${added.map((l) => `+${l}`).join("\n")}`

describe("dependency detection", () => {
  it("reads package.json dependencies of every kind and the package's own name", () => {
    const manifest = JSON.stringify({
      name: "@acme/web",
      dependencies: { react: "^19" },
      devDependencies: { "@acme/shared": "workspace:*" },
      peerDependencies: { effect: "4" }
    })
    expect([...dependenciesOf(manifest)].sort()).toEqual(["@acme/shared", "effect", "react"])
    expect(packageNameOf(manifest)).toBe("@acme/web")
    expect(dependenciesOf("not json").size).toBe(0)
    expect(dependenciesOf("[1,2]").size).toBe(0)
    expect(packageNameOf('{"name": 3}')).toBeNull()
  })

  it("proposes the sibling whose package the manifest depends on, with why", () => {
    const found = detectDependencies({
      primary,
      manifest: JSON.stringify({ dependencies: { "@acme/shared": "1.0.0" } }),
      gitmodules: null,
      changedFiles: [],
      siblings: [shared, api, self]
    })
    expect(found).toEqual([
      {
        secondaryRepositoryId: "r-shared",
        secondaryOwner: "acme",
        secondaryName: "shared",
        source: "package_dependency",
        reason: 'package.json depends on "@acme/shared", which acme/shared publishes'
      }
    ])
  })

  it("finds submodules, imports in added lines and references from spec files; never the primary itself or another owner", () => {
    const found = detectDependencies({
      primary,
      manifest: null,
      gitmodules:
        '[submodule "protos"]\n\tpath = protos\n\turl = git@github.com:acme/protos.git\n[submodule "x"]\n\turl = https://github.com/other/thing.git\n',
      changedFiles: [
        { path: "src/app.ts", patch: patch('import { greet } from "@acme/shared/greet"', "// @acme/web") },
        {
          path: "openapi.yaml",
          patch: patch(
            "$ref: https://raw.github.com/x",
            "  $ref: 'https://github.com/acme/api/blob/main/spec.yaml#/User'"
          )
        },
        { path: "go.mod", patch: patch("require github.com/acme/web v1.0.0") },
        { path: "README.md", patch: patch("see https://github.com/acme/docs") }
      ],
      siblings: [shared, api, self]
    })
    expect(
      found.map((entry) => [entry.secondaryOwner, entry.secondaryName, entry.secondaryRepositoryId, entry.source])
    ).toEqual([
      ["acme", "protos", null, "git_submodule"],
      ["acme", "shared", "r-shared", "import"],
      ["acme", "api", "r-api", "file_reference"]
    ])
    expect(found[1]?.reason).toBe('src/app.ts imports "@acme/shared", which acme/shared publishes')
  })

  it("a pull request that refers to a sibling's pull request is changed together with it; other repositories' are not proposed", () => {
    const found = detectDependencies({
      primary,
      manifest: null,
      gitmodules: null,
      changedFiles: [],
      pullRequestText:
        "Adds the endpoint.\nNeeds acme/api#41 and https://github.com/acme/api/pull/42 first; see other/thing#3 and acme/unknown#9.",
      siblings: [shared, api, self]
    })
    expect(found).toEqual([
      {
        secondaryRepositoryId: "r-api",
        secondaryOwner: "acme",
        secondaryName: "api",
        source: "co_changed_pull_request",
        reason: "this pull request is changed together with acme/api#41"
      }
    ])
  })

  it("reads import, require and dynamic import of a package or its subpaths, and nothing that only mentions it", () => {
    for (const line of [
      'import x from "@acme/shared"',
      "import '@acme/shared/styles.css'",
      'const { a } = require("@acme/shared")',
      "await import(`@acme/shared/lazy`)",
      'export { b } from "@acme/shared/b"'
    ]) {
      expect(importsPackage(line, "@acme/shared"), line).toBe(true)
    }
    for (const line of ['const name = "@acme/shared"', 'import x from "@acme/shared-utils"', "// @acme/shared"]) {
      expect(importsPackage(line, "@acme/shared"), line).toBe(false)
    }
  })

  it("proposes each secondary repository once, whatever the order and number of its signs", () => {
    const sign = fc.constantFrom(
      { path: "src/a.ts", patch: patch('import "@acme/shared"') },
      { path: "src/b.js", patch: patch('require("@acme/shared")') },
      { path: "spec.yaml", patch: patch("$ref: https://github.com/acme/shared/blob/main/x.yaml") },
      { path: "notes.txt", patch: patch("https://github.com/acme/shared") }
    )
    fc.assert(
      fc.property(fc.array(sign, { maxLength: 8 }), fc.boolean(), (files, withManifest) => {
        const found = detectDependencies({
          primary,
          manifest: withManifest ? JSON.stringify({ dependencies: { "@acme/shared": "1" } }) : null,
          gitmodules: null,
          changedFiles: files,
          siblings: [shared, self]
        })
        const expected = withManifest || files.some((file) => file.path !== "notes.txt") ? 1 : 0
        expect(found.length).toBe(expected)
        expect(found.every((entry) => entry.secondaryRepositoryId === "r-shared")).toBe(true)
        if (withManifest) expect(found[0]?.source).toBe("package_dependency")
      })
    )
  })
})
