/**
 * `bosun doctor`, the key-ring check: a dry run of rotation that writes nothing, not even a
 * rotation run. Every envelope of every sealed column (`SealedColumns`) is opened with the
 * configured ring (`Secrets.checkUnsafe`, rotation's own check), and the line counts the
 * envelopes per table and the key versions they are under. A failure names the envelopes that
 * do not open by place and reason, never their contents.
 */
import { type Context, Effect } from "effect"
import { type SealedRow, SecretRotationRepo } from "../../features/secrets/SecretRotationRepo.ts"
import type { MasterKeySettings } from "../../platform/config/AppConfig.ts"
import { placeOf, type SealedColumn, SealedColumns } from "../../platform/crypto/SealedColumns.ts"
import { makeKeyRing, Secrets, type SecretsError } from "../../platform/crypto/Secrets.ts"
import { CheckFailed } from "./CheckResult.ts"
import { presentTables } from "./DatabaseCheck.ts"

export const KEY_RING = "Key ring"

const BATCH = 500
/** How many rows of one kind of failure a line names; the rest are counted. */
const NAMED = 3

const versionLabel = (version: number) => (version === 0 ? "not an envelope" : `v${version}`)

/** `organization_secrets 60 (v1 57, v2 3)`. */
const tableSummary = (table: string, census: ReadonlyMap<number, number>) => {
  const total = [...census.values()].reduce((sum, n) => sum + n, 0)
  const versions = [...census.entries()]
    .sort(([a], [b]) => a - b)
    .map(([version, n]) => (census.size === 1 ? versionLabel(version) : `${versionLabel(version)} ${n}`))
  return `${table} ${total} (${versions.join(", ")})`
}

/**
 * The unreadable envelopes grouped by column, reason and key version, each group in plain words
 * with the first rows it concerns: `3 in organization_secrets.value are sealed under key version
 * 1, which the ring does not hold (rows a, b, c)`.
 */
const describeUnreadable = (unreadable: ReadonlyArray<SecretsError>) => {
  const groups = new Map<string, Array<SecretsError>>()
  for (const error of unreadable) {
    const key = `${error.place.table}.${error.place.column}|${error.reason}|${error.keyVersion ?? ""}`
    groups.set(key, [...(groups.get(key) ?? []), error])
  }
  return [...groups.values()]
    .map((errors) => {
      const first = errors[0]
      if (first === undefined) return ""
      const where = `${errors.length} in ${first.place.table}.${first.place.column}`
      const what =
        first.reason === "UnknownKeyVersion"
          ? `are sealed under key version ${first.keyVersion}, which the ring does not hold`
          : first.reason === "AuthenticationFailed"
            ? `under key version ${first.keyVersion} fail authentication (altered, copied from another row, or sealed under another key of that version)`
            : "are not Bosun envelopes"
      const rows = errors.slice(0, NAMED).map((error) => error.place.rowId)
      const more = errors.length > NAMED ? ` and ${errors.length - NAMED} more` : ""
      return `${where} ${what} (row${errors.length === 1 ? "" : "s"} ${rows.join(", ")}${more})`
    })
    .join("; ")
}

const fixFor = (unreadable: ReadonlyArray<SecretsError>) => {
  const fixes: Array<string> = []
  const missing = [...new Set(unreadable.filter((e) => e.reason === "UnknownKeyVersion").map((e) => e.keyVersion))]
  if (missing.length > 0) {
    fixes.push(
      `add the key of version(s) ${missing.join(", ")} to BOSUN_PREVIOUS_MASTER_KEYS (keys are never removed until a rotation has re-sealed everything); without it those secrets are lost and must be entered again`
    )
  }
  if (unreadable.some((e) => e.reason === "AuthenticationFailed")) {
    fixes.push(
      "a key of the ring is not the one that sealed them under its version: deploy the right key for that version, or restore rows that were altered from a backup"
    )
  }
  if (unreadable.some((e) => e.reason === "Malformed")) {
    fixes.push("a sealed column holds a value Bosun did not write: restore it from a backup or enter that secret again")
  }
  return fixes.join("; ")
}

/** Opens every envelope of `column`, batch by batch, and returns those that do not open. */
const unreadableIn = (
  secrets: Context.Service.Shape<typeof Secrets>,
  repo: Context.Service.Shape<typeof SecretRotationRepo>,
  column: SealedColumn
) =>
  Effect.gen(function* () {
    const unreadable: Array<SecretsError> = []
    let afterId: string | null = null
    while (true) {
      const rows: ReadonlyArray<SealedRow> = yield* repo.readBatch(column, afterId, BATCH, undefined)
      for (const row of rows) {
        const problem = secrets.checkUnsafe(row.envelope, placeOf(column, row.id))
        if (problem !== undefined) unreadable.push(problem)
      }
      if (rows.length < BATCH) return unreadable
      afterId = rows[rows.length - 1]?.id ?? afterId
    }
  })

export const checkKeyRing = Effect.fn("Doctor.keyRing")(function* (masterKey: MasterKeySettings) {
  const repo = yield* SecretRotationRepo
  const secrets = Secrets.make(makeKeyRing(masterKey))
  const present = yield* presentTables([...new Set(SealedColumns.map((column) => column.table))])
  const columns = SealedColumns.filter((column) => present.has(column.table))
  const byTable = new Map<string, Map<number, number>>()
  const unreadable: Array<SecretsError> = []
  for (const column of columns) {
    const census = byTable.get(column.table) ?? new Map<number, number>()
    for (const [version, n] of yield* repo.versions([column])) census.set(version, (census.get(version) ?? 0) + n)
    byTable.set(column.table, census)
    unreadable.push(...(yield* unreadableIn(secrets, repo, column)))
  }
  const tables = [...byTable.entries()].filter(([, census]) => census.size > 0)
  const total = tables.reduce((sum, [, census]) => sum + [...census.values()].reduce((a, n) => a + n, 0), 0)
  const perTable = tables.map(([table, census]) => tableSummary(table, census)).join(", ")
  const ring = `active version ${masterKey.version}${
    masterKey.previous.size === 0 ? "" : `, previous ${[...masterKey.previous.keys()].sort((a, b) => a - b).join(", ")}`
  }`
  if (unreadable.length > 0) {
    return yield* new CheckFailed({
      message: `${unreadable.length} of ${total} envelopes do not open with the ring (${ring}): ${describeUnreadable(unreadable)}. By table: ${perTable}`,
      fix: fixFor(unreadable)
    })
  }
  if (total === 0) return `no sealed secrets yet (${ring})`
  const older = tables.reduce(
    (sum, [, census]) =>
      sum + [...census.entries()].filter(([version]) => version !== masterKey.version).reduce((a, [, n]) => a + n, 0),
    0
  )
  return `all ${total} envelopes open (${ring}): ${perTable}${
    older === 0 ? "" : `; ${older} under an older key, which \`bosun secrets rotate\` re-seals`
  }`
})
