/**
 * The `.bosun.yaml` a team keeps at the root of its default branch to steer reviews: its schema,
 * its limits, and the JSON Schema editors validate it with. Reading and parsing the file is the
 * server's; this module only says what a valid file is.
 */
import { JsonSchema, Schema } from "effect"
import { Instruction, PathInstruction, ReviewPolicyInput } from "./RepositoryConfiguration.ts"

export const BOSUN_CONFIG_FILE = ".bosun.yaml"

/** Larger files are refused before parsing: 64 KiB holds any sensible set of instructions. */
export const MAX_BOSUN_CONFIG_BYTES = 64 * 1024

export const MAX_PATH_INSTRUCTIONS = 100

/** Where the server publishes {@link bosunConfigJsonSchema}; also the document's `$id`. */
export const BOSUN_CONFIG_SCHEMA_PATH = "/api/v1/schemas/bosun-config.json"

const optional = <S extends Schema.Top>(schema: S, description: string) =>
  Schema.optionalKey(schema.annotate({ description }))

const policy = ReviewPolicyInput.fields

/**
 * Any subset of review_policy; what the file leaves out keeps the organization's or Bosun's value.
 * A review policy field added without being listed here fails to compile (the `satisfies`).
 */
export const BosunConfigReviewPolicy = Schema.Struct({
  comment_limit: optional(policy.comment_limit, "The most inline comments one review posts."),
  excluded_authors: optional(policy.excluded_authors, "GitHub logins whose pull requests are not reviewed."),
  excluded_paths: optional(
    policy.excluded_paths,
    "Globs of files reviews leave out, read in order; a leading ! includes again."
  ),
  max_changed_files: optional(policy.max_changed_files, "Pull requests changing more files are not reviewed."),
  review_drafts: optional(policy.review_drafts, "Whether draft pull requests are reviewed."),
  review_on_open: optional(policy.review_on_open, "Review when a pull request is opened."),
  review_on_push: optional(policy.review_on_push, "Review again when commits are pushed."),
  review_on_ready: optional(policy.review_on_ready, "Review when a draft is marked ready for review."),
  review_on_reopen: optional(policy.review_on_reopen, "Review when a pull request is reopened."),
  strictness: optional(policy.strictness, "How much the review flags: LOW, MEDIUM or HIGH."),
  guidance: optional(Instruction, "Free text on what reviews should focus on.")
} satisfies Record<keyof typeof policy | "guidance", Schema.Top>)

/** A `PathInstruction`, described for editors. */
export const BosunConfigPathInstruction = Schema.Struct({
  // Glob's own check is invisible to JSON Schema; the length bounds it implies are not.
  path: PathInstruction.fields.path.check(Schema.isMinLength(1), Schema.isMaxLength(512)).annotate({
    description: "A glob; one without a / matches file names at any depth (*.ts matches src/a.ts)."
  }),
  instructions: PathInstruction.fields.instructions.annotate({
    description: "What reviews should do with the files the glob matches."
  })
})

export const BosunConfigFile = Schema.Struct({
  review_policy: Schema.optionalKey(
    BosunConfigReviewPolicy.annotate({ description: "Overrides of the repository's review policy." })
  ),
  custom_instructions: optional(Instruction, "Instructions the agent follows on every review of this repository."),
  path_instructions: optional(
    Schema.Array(BosunConfigPathInstruction).check(Schema.isMaxLength(MAX_PATH_INSTRUCTIONS)),
    "Instructions for the files a glob matches, in order."
  )
})
export type BosunConfigFile = typeof BosunConfigFile.Type

/** Decoding rejects unknown keys: a misspelt key silently doing nothing is the failure this file invites. */
export const BOSUN_CONFIG_PARSE_OPTIONS = { onExcessProperty: "error", errors: "all" } as const

const generated = JsonSchema.toDocumentDraft07(
  Schema.toJsonSchemaDocument(BosunConfigFile, { onExcessProperty: "error" })
)

/**
 * JSON Schema (draft-07, which yaml-language-server and VS Code validate fully) for the file,
 * generated from {@link BosunConfigFile}. It is a first line of validation in the editor; the
 * server's decoder stays the authority (globs' bracket pairing, for one, only it checks).
 */
export const bosunConfigJsonSchema: JsonSchema.JsonSchema = {
  $schema: JsonSchema.META_SCHEMA_URI_DRAFT_07,
  $id: BOSUN_CONFIG_SCHEMA_PATH,
  title: "Bosun repository configuration (.bosun.yaml)",
  description:
    "Steers Bosun's reviews of this repository; read from the root of the default branch. Every key is optional.",
  ...generated.schema,
  ...(Object.keys(generated.definitions).length > 0 ? { definitions: generated.definitions } : {})
}
