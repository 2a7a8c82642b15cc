/**
 * The migration-file splitter: a `;` ends a statement only outside strings, identifiers, comments
 * and dollar quotes.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { splitSqlStatements } from "../../../src/platform/db/SqlStatements.ts"

describe("splitSqlStatements", () => {
  it("splits on semicolons and drops empty and comment-only pieces", () => {
    assert.deepStrictEqual(splitSqlStatements("CREATE TABLE a (id int);\n\n-- only a comment\n;SELECT 1"), [
      "CREATE TABLE a (id int)",
      "SELECT 1"
    ])
  })

  it("keeps semicolons inside quoted strings, escape strings, identifiers and comments", () => {
    const sql = [
      "INSERT INTO t VALUES ('a;b', 'it''s;')",
      "INSERT INTO t VALUES (E'x\\';y')",
      'CREATE TABLE "odd;name" (id int)',
      "SELECT 1 /* a; /* nested; */ still; */",
      "SELECT 2 -- trailing; comment\n"
    ]
    assert.deepStrictEqual(
      splitSqlStatements(sql.join(";\n")),
      sql.map((s) => s.trim())
    )
  })

  it("keeps semicolons inside dollar-quoted bodies, tagged or not, and ignores $1 parameters", () => {
    const fn = "CREATE FUNCTION f() RETURNS int AS $$ BEGIN PERFORM 1; RETURN 1; END $$ LANGUAGE plpgsql"
    const tagged = "DO $body$ BEGIN RAISE NOTICE 'x;'; END $body$"
    const param = "PREPARE p AS SELECT $1::int"
    assert.deepStrictEqual(splitSqlStatements(`${fn};\n${tagged};\n${param};`), [fn, tagged, param])
  })

  const plain = fc.stringMatching(/^[a-z0-9 _(),=]{1,20}$/)
  const piece = fc.oneof(
    plain,
    fc.string({ maxLength: 10 }).map((s) => `'${s.replaceAll("'", "''")}'`),
    fc.string({ maxLength: 10 }).map((s) => `"${s.replaceAll('"', '""')}"`),
    fc
      .string({ maxLength: 10 })
      .filter((s) => !s.includes("$q$"))
      .map((s) => `$q$${s}$q$`),
    // Comment text without "/" or "*": "/*/*/" is an unterminated nested comment to Postgres too.
    fc
      .string({ maxLength: 10 })
      .filter((s) => !/[/*]/.test(s))
      .map((s) => `/*${s}*/`)
  )
  const statement = fc.array(piece, { minLength: 1, maxLength: 6 }).map((parts) => `SELECT ${parts.join(" ")}`)

  it("recovers any list of statements joined by semicolons (property)", () => {
    fc.assert(
      fc.property(fc.array(statement, { minLength: 1, maxLength: 8 }), (statements) => {
        assert.deepStrictEqual(
          splitSqlStatements(statements.join(";\n")),
          statements.map((s) => s.trim())
        )
      })
    )
  })
})
