/**
 * The import rules `npm run lint` enforces (`.dependency-cruiser.cjs`), each shown to catch an
 * import that breaks it: small trees laid out like the repository are written to a temporary
 * directory and cruised with the repository's own rules.
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { cruise, type ICruiseResult, type IForbiddenRuleType } from "dependency-cruiser"

const rules = createRequire(import.meta.url)("../../../../.dependency-cruiser.cjs") as {
  readonly forbidden: Array<IForbiddenRuleType>
}

/** Cruises a tree of `files` (path → text) with the repository's rules; answers the rules broken, with where. */
const violationsOf = async (files: Record<string, string>): Promise<Array<string>> => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-import-rules-"))
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true })
    fs.writeFileSync(path.join(root, file), text)
  }
  const cwd = process.cwd()
  process.chdir(root)
  const result = await cruise(
    ["packages"],
    { validate: true, ruleSet: { forbidden: rules.forbidden }, tsPreCompilationDeps: true },
    { extensions: [".ts"] }
  ).finally(() => {
    process.chdir(cwd)
    fs.rmSync(root, { recursive: true, force: true })
  })
  const output = result.output as ICruiseResult
  return output.summary.violations.map((violation) => `${violation.rule.name}: ${violation.from} -> ${violation.to}`)
}

const exporting = "export const value = 1\n"
const importing = (target: string) => `import { value } from "${target}"\nexport const used = value\n`

describe("the import rules", () => {
  it("a tree that keeps every rule has no violation", async () => {
    assert.deepStrictEqual(
      await violationsOf({
        "packages/domain/src/Schema.ts": exporting,
        "packages/runtime/src/Runs.ts": importing("../../domain/src/Schema.ts"),
        "packages/actors/src/Actor.ts": importing("../../domain/src/Schema.ts"),
        "packages/server/src/app/Server.ts": importing("../inbound/github/Webhooks.ts"),
        "packages/server/src/inbound/github/Webhooks.ts": importing("../../features/reviews/index.ts"),
        "packages/server/src/features/reviews/index.ts": importing("./ReviewService.ts"),
        "packages/server/src/features/reviews/ReviewService.ts": importing("../memories/index.ts"),
        "packages/server/src/features/memories/index.ts": importing("../../outbound/github/Pulls.ts"),
        "packages/server/src/outbound/github/Pulls.ts": importing("../../platform/db/Database.ts"),
        "packages/server/src/platform/db/Database.ts": importing("../../../../platform/src/Redis.ts"),
        "packages/server/src/platform/db/Migrator.ts": importing("../../../../actors/src/Actor.ts"),
        "packages/platform/src/Redis.ts": exporting,
        "packages/testing/src/Fake.ts": importing("../../platform/src/Redis.ts")
      }),
      []
    )
  })

  it("domain importing another package of ours breaks domain-imports-nothing-of-ours", async () => {
    assert.deepStrictEqual(
      await violationsOf({
        "packages/domain/src/Schema.ts": importing("../../server/src/Server.ts"),
        "packages/server/src/Server.ts": exporting
      }),
      ["domain-imports-nothing-of-ours: packages/domain/src/Schema.ts -> packages/server/src/Server.ts"]
    )
  })

  it("platform importing another package of ours breaks platform-imports-nothing-of-ours", async () => {
    assert.deepStrictEqual(
      await violationsOf({
        "packages/platform/src/Redis.ts": importing("../../domain/src/Schema.ts"),
        "packages/domain/src/Schema.ts": exporting
      }),
      ["platform-imports-nothing-of-ours: packages/platform/src/Redis.ts -> packages/domain/src/Schema.ts"]
    )
  })

  it("the runtime importing the actors breaks runtime-imports-only-domain", async () => {
    assert.deepStrictEqual(
      await violationsOf({
        "packages/runtime/src/Runs.ts": importing("../../actors/src/Actor.ts"),
        "packages/actors/src/Actor.ts": exporting
      }),
      ["runtime-imports-only-domain: packages/runtime/src/Runs.ts -> packages/actors/src/Actor.ts"]
    )
  })

  it("the actors importing the server breaks actors-import-no-server", async () => {
    assert.deepStrictEqual(
      await violationsOf({
        "packages/actors/src/Actor.ts": importing("../../server/src/Server.ts"),
        "packages/server/src/Server.ts": exporting
      }),
      ["actors-import-no-server: packages/actors/src/Actor.ts -> packages/server/src/Server.ts"]
    )
  })

  it("the dashboard importing the server breaks dashboard-uses-only-the-contract", async () => {
    assert.deepStrictEqual(
      await violationsOf({
        "packages/dashboard/src/App.ts": importing("../../server/src/Server.ts"),
        "packages/server/src/Server.ts": exporting
      }),
      ["dashboard-uses-only-the-contract: packages/dashboard/src/App.ts -> packages/server/src/Server.ts"]
    )
  })

  it("production code importing the test kit breaks production-imports-no-test-kit", async () => {
    assert.deepStrictEqual(
      await violationsOf({
        "packages/server/src/Server.ts": importing("../../testing/src/Fake.ts"),
        "packages/testing/src/Fake.ts": exporting
      }),
      ["production-imports-no-test-kit: packages/server/src/Server.ts -> packages/testing/src/Fake.ts"]
    )
  })

  it("the test kit importing the server breaks test-kit-imports-no-package-it-tests", async () => {
    assert.deepStrictEqual(
      await violationsOf({
        "packages/testing/src/Fake.ts": importing("../../server/src/platform/db/Database.ts"),
        "packages/server/src/platform/db/Database.ts": exporting
      }),
      [
        "test-kit-imports-no-package-it-tests: packages/testing/src/Fake.ts -> packages/server/src/platform/db/Database.ts"
      ]
    )
  })

  it("two modules importing each other break no-circular", async () => {
    const found = await violationsOf({
      "packages/server/src/platform/a.ts": `${importing("./b.ts")}`,
      "packages/server/src/platform/b.ts": `import { used } from "./a.ts"\nexport const value = used\n`
    })
    // The circle is reported once, at whichever of its imports the cruise meets first.
    assert.strictEqual(found.length, 1)
    assert.include(
      [
        "no-circular: packages/server/src/platform/a.ts -> packages/server/src/platform/b.ts",
        "no-circular: packages/server/src/platform/b.ts -> packages/server/src/platform/a.ts"
      ],
      found[0]
    )
  })

  it("a feature importing inbound/ or app/ breaks server-folders-point-down", async () => {
    assert.deepStrictEqual(
      await violationsOf({
        "packages/server/src/features/reviews/index.ts": importing("../../inbound/github/Webhooks.ts"),
        "packages/server/src/inbound/github/Webhooks.ts": exporting
      }),
      [
        "server-folders-point-down: packages/server/src/features/reviews/index.ts -> packages/server/src/inbound/github/Webhooks.ts"
      ]
    )
  })

  it("platform/ importing a feature breaks platform-imports-no-feature", async () => {
    assert.deepStrictEqual(
      await violationsOf({
        "packages/server/src/platform/db/Database.ts": importing("../../features/reviews/index.ts"),
        "packages/server/src/features/reviews/index.ts": exporting
      }),
      [
        "platform-imports-no-feature: packages/server/src/platform/db/Database.ts -> packages/server/src/features/reviews/index.ts"
      ]
    )
  })

  it("a feature reaching into another feature's internals breaks features-meet-through-their-public-module", async () => {
    assert.deepStrictEqual(
      await violationsOf({
        "packages/server/src/features/reviews/ReviewService.ts": importing("../memories/MemoriesRepo.ts"),
        "packages/server/src/features/memories/MemoriesRepo.ts": exporting
      }),
      [
        "features-meet-through-their-public-module: packages/server/src/features/reviews/ReviewService.ts -> packages/server/src/features/memories/MemoriesRepo.ts"
      ]
    )
  })
})
