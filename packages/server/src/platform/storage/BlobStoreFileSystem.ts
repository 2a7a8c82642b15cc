/**
 * Blob store adapter for the embedded default: files under `BOSUN_DATA_DIR/blobs`.
 *
 * Layout: `data/<path>` holds the bytes, `meta/<path>.json` the content type, where `<path>` is
 * the key with `.d` appended to every directory segment and `.f` to the file name: S3 lets `a`
 * and `a/b` both be keys, a file system does not let `a` be a file and a directory. Every write goes to a
 * temporary file first and is renamed into place (metadata before data), so a reader sees a
 * whole blob or none. `ifAbsent` uses `link(2)`, which fails atomically when the name exists.
 * Resolved paths are checked to stay under the root as a second line behind key validation.
 */

import { randomBytes } from "node:crypto"
import { createReadStream, createWriteStream } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { pipeline } from "node:stream/promises"
import { NodeStream } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import {
  type BlobBody,
  type BlobMetadata,
  BlobStore,
  BlobStoreError,
  type BlobSummary,
  clampLimit,
  DEFAULT_CONTENT_TYPE,
  type ListOptions,
  type PutOptions,
  validateKey,
  validatePrefix
} from "./BlobStore.ts"

const unavailable = (key: string, what: string) => (cause: unknown) =>
  new BlobStoreError({
    reason: "Unavailable",
    key,
    message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`,
    cause
  })

const errnoOf = (cause: unknown) => (cause as NodeJS.ErrnoException | undefined)?.code

/** `a/b/c` → `a.d/b.d/c.f`: injective, and no file name can equal a directory name. */
const toRelativePath = (key: string) => {
  const segments = key.split("/")
  return segments.map((s, i) => (i === segments.length - 1 ? `${s}.f` : `${s}.d`)).join("/")
}
const dirPath = (dirKey: string) =>
  dirKey
    .split("/")
    .map((s) => `${s}.d`)
    .join("/")
const fromRelativePath = (relative: string) =>
  relative
    .split("/")
    .map((s) => s.slice(0, -2))
    .join("/")

const compareKeys = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))

/** The store's three directories under its root. */
interface Dirs {
  readonly dataDir: string
  readonly metaDir: string
  readonly tmpDir: string
}

/** `key`'s file under `dir`; a path that would leave `dir` throws, behind key validation. */
const inside = (dir: string, key: string, suffix = "") => {
  const resolved = path.resolve(dir, toRelativePath(key) + suffix)
  if (!resolved.startsWith(dir + path.sep)) throw new Error(`blob path escapes the store: ${key}`)
  return resolved
}

const tmpFile = (tmpDir: string) => path.join(tmpDir, randomBytes(12).toString("hex"))

const writeBody = (file: string, body: BlobBody) =>
  body instanceof Uint8Array
    ? Effect.tryPromise({ try: () => fs.writeFile(file, body), catch: unavailable("", "write") })
    : Effect.flatMap(NodeStream.toReadable(body), (readable) =>
        Effect.tryPromise({
          try: () => pipeline(readable, createWriteStream(file)),
          catch: (cause) => (cause instanceof BlobStoreError ? cause : unavailable("", "write")(cause))
        })
      )

const metadataOf = ({ dataDir, metaDir }: Dirs, key: string) =>
  Effect.tryPromise({
    try: async (): Promise<Option.Option<BlobMetadata>> => {
      const stat = await fs.stat(inside(dataDir, key)).catch((cause) => {
        if (errnoOf(cause) === "ENOENT" || errnoOf(cause) === "ENOTDIR") return undefined
        throw cause
      })
      if (stat === undefined || !stat.isFile()) return Option.none()
      const meta = await fs
        .readFile(inside(metaDir, key, ".json"), "utf8")
        .then((text) => JSON.parse(text) as { contentType?: string })
        .catch(() => ({ contentType: undefined }))
      return Option.some({
        key,
        size: stat.size,
        contentType: meta.contentType ?? DEFAULT_CONTENT_TYPE,
        lastModified: stat.mtime
      })
    },
    catch: unavailable(key, "head")
  })

/** Every key under `dir` (recursively), relative to `dataDir`. */
const walk = async (dataDir: string, dir: string, out: Array<string>): Promise<void> => {
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch((cause) => {
    if (errnoOf(cause) === "ENOENT" || errnoOf(cause) === "ENOTDIR") return []
    throw cause
  })
  for (const entry of entries) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) await walk(dataDir, full, out)
    else if (entry.isFile()) out.push(fromRelativePath(path.relative(dataDir, full).split(path.sep).join("/")))
  }
}

/** Writes and deletes: each write lands in a temporary file first, renamed into place. */
const blobWrites = (dirs: Dirs) => {
  const { dataDir, metaDir, tmpDir } = dirs

  const put = Effect.fn("BlobStore.put")(function* (key: string, body: BlobBody, options?: PutOptions) {
    yield* validateKey(key)
    const dataPath = inside(dataDir, key)
    const metaPath = inside(metaDir, key, ".json")
    const dataTmp = tmpFile(tmpDir)
    const metaTmp = tmpFile(tmpDir)
    const cleanup = Effect.promise(() =>
      Promise.all([fs.rm(dataTmp, { force: true }), fs.rm(metaTmp, { force: true })])
    )
    yield* Effect.gen(function* () {
      yield* writeBody(dataTmp, body)
      yield* Effect.tryPromise({
        try: async () => {
          await fs.writeFile(metaTmp, JSON.stringify({ contentType: options?.contentType ?? DEFAULT_CONTENT_TYPE }))
          await fs.mkdir(path.dirname(dataPath), { recursive: true })
          await fs.mkdir(path.dirname(metaPath), { recursive: true })
        },
        catch: unavailable(key, "put")
      })
      if (options?.ifAbsent) {
        yield* Effect.tryPromise({
          try: () => fs.link(dataTmp, dataPath),
          catch: (cause) =>
            errnoOf(cause) === "EEXIST"
              ? new BlobStoreError({ reason: "AlreadyExists", key, message: "a blob with this key exists" })
              : unavailable(key, "put")(cause)
        })
        yield* Effect.tryPromise({ try: () => fs.rename(metaTmp, metaPath), catch: unavailable(key, "put") })
      } else {
        yield* Effect.tryPromise({
          try: async () => {
            await fs.rename(metaTmp, metaPath)
            await fs.rename(dataTmp, dataPath)
          },
          catch: unavailable(key, "put")
        })
      }
    }).pipe(Effect.ensuring(cleanup))
    const meta = yield* metadataOf(dirs, key)
    return yield* Effect.fromOption(meta).pipe(Effect.mapError(unavailable(key, "put: blob vanished after write")))
  })

  const remove = Effect.fn("BlobStore.delete")(function* (key: string) {
    yield* validateKey(key)
    yield* Effect.tryPromise({
      try: () =>
        Promise.all([
          fs.rm(inside(dataDir, key), { force: true }),
          fs.rm(inside(metaDir, key, ".json"), { force: true })
        ]),
      catch: unavailable(key, "delete")
    })
  })

  return { put, delete: remove }
}

/** Reads: one blob's bytes or metadata, and the keys under a prefix, page by page. */
const blobReads = (dirs: Dirs) => {
  const { dataDir } = dirs

  const get = Effect.fn("BlobStore.get")(function* (key: string) {
    yield* validateKey(key)
    const file = inside(dataDir, key)
    const notFound = (cause: unknown) =>
      errnoOf(cause) === "ENOENT" || errnoOf(cause) === "ENOTDIR" || errnoOf(cause) === "EISDIR"
        ? new BlobStoreError({ reason: "NotFound", key, message: "no blob with this key" })
        : unavailable(key, "get")(cause)
    const stat = yield* Effect.tryPromise({ try: () => fs.stat(file), catch: notFound })
    if (!stat.isFile()) return yield* notFound({ code: "EISDIR" })
    // The file is opened when the stream is run, so an unread stream holds no descriptor; a
    // blob deleted in between fails the stream with NotFound.
    return NodeStream.fromReadable<Uint8Array, BlobStoreError>({
      evaluate: () => createReadStream(file),
      onError: notFound
    })
  })

  const head = Effect.fn("BlobStore.head")(function* (key: string) {
    yield* validateKey(key)
    return yield* metadataOf(dirs, key)
  })

  const list = Effect.fn("BlobStore.list")(function* (prefix: string, options?: ListOptions) {
    yield* validatePrefix(prefix)
    const limit = clampLimit(options?.limit)
    const after = options?.cursor === undefined ? undefined : Buffer.from(options.cursor, "base64url").toString()
    // Walk only the deepest directory the prefix names; filter the rest by plain prefix.
    const slash = prefix.lastIndexOf("/")
    const start = slash === -1 ? dataDir : path.join(dataDir, dirPath(prefix.slice(0, slash)))
    const keys = yield* Effect.tryPromise({
      try: async () => {
        const all: Array<string> = []
        await walk(dataDir, start, all)
        return all
      },
      catch: unavailable(prefix, "list")
    })
    const matching = keys
      .filter((k) => k.startsWith(prefix) && (after === undefined || compareKeys(k, after) > 0))
      .sort(compareKeys)
    const page = matching.slice(0, limit)
    const items = yield* Effect.tryPromise({
      try: () =>
        Promise.all(
          page.map(async (key): Promise<BlobSummary> => {
            const stat = await fs.stat(inside(dataDir, key))
            return { key, size: stat.size, lastModified: stat.mtime }
          })
        ),
      catch: unavailable(prefix, "list")
    })
    const last = page[page.length - 1]
    return {
      items,
      nextCursor:
        matching.length > limit && last !== undefined
          ? Option.some(Buffer.from(last).toString("base64url"))
          : Option.none()
    }
  })

  return { get, head, list }
}

export const makeFileSystemBlobStore = Effect.fn("BlobStore.makeFileSystem")(function* (root: string) {
  const base = path.resolve(root)
  const dataDir = path.join(base, "data")
  const metaDir = path.join(base, "meta")
  const tmpDir = path.join(base, "tmp")
  // The server's alone (docs/agent-isolation.md): 0700, whatever an earlier version left.
  yield* Effect.tryPromise({
    try: async () => {
      await fs.mkdir(base, { recursive: true, mode: 0o700 })
      await fs.chmod(base, 0o700)
      await Promise.all([dataDir, metaDir, tmpDir].map((d) => fs.mkdir(d, { recursive: true, mode: 0o700 })))
    },
    catch: unavailable("", "cannot create the blob directories")
  })

  const dirs: Dirs = { dataDir, metaDir, tmpDir }
  return BlobStore.of({ ...blobWrites(dirs), ...blobReads(dirs) })
})

/** The embedded default: blobs under `root` (normally `BOSUN_DATA_DIR/blobs`). */
export const layerFileSystem = (root: string) => Layer.effect(BlobStore, makeFileSystemBlobStore(root))
