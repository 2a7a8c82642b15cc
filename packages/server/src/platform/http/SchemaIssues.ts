/**
 * Schema failures as short `where: what was expected` lines for people (config errors at start-up,
 * 400 responses). The submitted value is never repeated: it may be a secret.
 */
import { type SchemaIssue as Issue, SchemaIssue } from "effect"

const format = SchemaIssue.makeFormatterStandardSchemaV1()

export interface IssueLine {
  readonly path: ReadonlyArray<string>
  readonly message: string
}

const segment = (s: PropertyKey | { readonly key: PropertyKey }) => String(typeof s === "object" ? s.key : s)

/** Schema's own wording, minus any trailing `, got <value>`. */
const withoutInput = (message: string) => message.replace(/,? got [\s\S]*$/, "").trim()

export const issueLines = (issue: Issue.Issue): ReadonlyArray<IssueLine> =>
  format(issue).issues.map((i) => ({ path: (i.path ?? []).map(segment), message: withoutInput(i.message) }))
