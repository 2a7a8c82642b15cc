/**
 * The blob store port (docs/interface.md: What the service does 4): run artifacts, workspace-change
 * diffs, output files and sealed run requests (`runs/{run}/{attempt}/request.enc`). Adapters:
 * `BlobStoreS3.ts` (any S3 API) and `BlobStoreFileSystem.ts` (the embedded default); both pass
 * the one conformance suite in `test/storage/BlobStore.conformance.ts`.
 *
 * Keys are validated before any adapter sees them: a bad key is an `InvalidKey` error, never a
 * file outside the store. Listing is by plain prefix, in byte order, paged with an opaque cursor.
 */
import { Context, Data, Effect, type Option, type Stream } from "effect"

export type BlobStoreErrorReason = "InvalidKey" | "NotFound" | "AlreadyExists" | "Unavailable"

export class BlobStoreError extends Data.TaggedError("BlobStoreError")<{
  readonly reason: BlobStoreErrorReason
  readonly key: string
  readonly message: string
  readonly cause?: unknown
}> {}

export interface BlobMetadata {
  readonly key: string
  readonly size: number
  readonly contentType: string
  readonly lastModified: Date
}

/** One entry of a listing: what the S3 list call returns without a request per object. */
export interface BlobSummary {
  readonly key: string
  readonly size: number
  readonly lastModified: Date
}

export interface PutOptions {
  readonly contentType?: string | undefined
  /** Fail with `AlreadyExists` instead of overwriting an existing blob. */
  readonly ifAbsent?: boolean | undefined
}

export interface ListOptions {
  /** Continue after the page that returned this cursor. */
  readonly cursor?: string | undefined
  /** Page size, 1..1000 (default 1000). */
  readonly limit?: number | undefined
}

export interface BlobPage {
  readonly items: ReadonlyArray<BlobSummary>
  readonly nextCursor: Option.Option<string>
}

export type BlobBody = Uint8Array | Stream.Stream<Uint8Array, BlobStoreError>

export const DEFAULT_CONTENT_TYPE = "application/octet-stream"
export const MAX_KEY_BYTES = 1024

/** Why `key` is not a valid blob key, or undefined when it is. */
export const keyProblem = (key: string): string | undefined => {
  if (key.length === 0) return "is empty"
  if (Buffer.byteLength(key, "utf8") > MAX_KEY_BYTES) return `is longer than ${MAX_KEY_BYTES} bytes`
  if (key.includes("\0")) return "contains a NUL byte"
  if (key.startsWith("/")) return "starts with '/'"
  if (key.includes("\\")) return "contains a backslash"
  const segments = key.split("/")
  if (segments.some((s) => s === "..")) return "contains a '..' segment"
  if (segments.some((s) => s === ".")) return "contains a '.' segment"
  if (segments.slice(0, -1).some((s) => s === "")) return "contains an empty segment ('//')"
  if (key.endsWith("/")) return "ends with '/'"
  return undefined
}

/** Fails with `InvalidKey` unless `key` is a valid blob key. */
export const validateKey = (key: string): Effect.Effect<string, BlobStoreError> => {
  const problem = keyProblem(key)
  return problem === undefined
    ? Effect.succeed(key)
    : Effect.fail(new BlobStoreError({ reason: "InvalidKey", key: key.slice(0, 64), message: `blob key ${problem}` }))
}

/** A prefix may be empty or end with '/'; otherwise it follows the key rules. */
export const validatePrefix = (prefix: string): Effect.Effect<string, BlobStoreError> =>
  prefix === "" ? Effect.succeed(prefix) : Effect.as(validateKey(prefix.endsWith("/") ? `${prefix}x` : prefix), prefix)

const segment = (what: string, value: string) => {
  if (value === "" || value.includes("/") || value === "." || value === "..") {
    throw new Error(`${what} is not usable in a blob key: ${JSON.stringify(value)}`)
  }
  return value
}

/** The key shapes docs/interface.md names (What the service does 4), in one place. */
export const BlobKeys = {
  /** The sealed run request: `runs/{run}/{attempt}/request.enc`. */
  runRequest: (runId: string, attempt: number) => `runs/${segment("run id", runId)}/${attempt}/request.enc`,
  /** The workspace-changes diff of an attempt. */
  workspaceDiff: (runId: string, attempt: number) => `runs/${segment("run id", runId)}/${attempt}/workspace.diff`,
  /** An artifact (e.g. the HTML report) of an attempt. */
  artifact: (runId: string, attempt: number, name: string) =>
    `runs/${segment("run id", runId)}/${attempt}/artifacts/${segment("artifact name", name)}`,
  /** An output file of an attempt; `path` may have directories. */
  output: (runId: string, attempt: number, path: string) =>
    `runs/${segment("run id", runId)}/${attempt}/outputs/${path}`,
  /** Everything of one attempt, for listing or cleanup. */
  attemptPrefix: (runId: string, attempt: number) => `runs/${segment("run id", runId)}/${attempt}/`
} as const

export class BlobStore extends Context.Service<
  BlobStore,
  {
    readonly put: (key: string, body: BlobBody, options?: PutOptions) => Effect.Effect<BlobMetadata, BlobStoreError>
    /** The blob's bytes as a stream; `NotFound` when there is none. */
    readonly get: (key: string) => Effect.Effect<Stream.Stream<Uint8Array, BlobStoreError>, BlobStoreError>
    readonly head: (key: string) => Effect.Effect<Option.Option<BlobMetadata>, BlobStoreError>
    readonly list: (prefix: string, options?: ListOptions) => Effect.Effect<BlobPage, BlobStoreError>
    /** Removes the blob; removing a missing blob succeeds. */
    readonly delete: (key: string) => Effect.Effect<void, BlobStoreError>
  }
>()("bosun/server/storage/BlobStore") {}

export const clampLimit = (limit: number | undefined) => Math.max(1, Math.min(1000, Math.floor(limit ?? 1000)))
