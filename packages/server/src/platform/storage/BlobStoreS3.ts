/**
 * Blob store adapter for any S3 API (AWS, MinIO, R2, GCS interop) through `@aws-sdk/client-s3`;
 * streamed bodies go through `@aws-sdk/lib-storage` multipart uploads (5 MiB parts, 4 at once).
 *
 * `ifAbsent` sends `If-None-Match: *`, which S3 enforces atomically; it also checks with HEAD
 * first, so servers that ignore conditional writes (s3rver) still refuse a plain second write.
 * Checksums are requested only when required: with the SDK's default, a streamed put to an
 * S3-compatible server that lacks the newer checksum headers stores the chunk framing.
 */

import type { Readable } from "node:stream"
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException
} from "@aws-sdk/client-s3"
import { Upload } from "@aws-sdk/lib-storage"
import { NodeStream } from "@effect/platform-node"
import { Effect, Layer, Option, Redacted } from "effect"
import type { S3Settings } from "../config/AppConfig.ts"
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

const statusOf = (cause: unknown) => (cause instanceof S3ServiceException ? cause.$metadata.httpStatusCode : undefined)
const nameOf = (cause: unknown) => (cause instanceof Error ? cause.name : undefined)

const isNotFound = (cause: unknown) =>
  statusOf(cause) === 404 || nameOf(cause) === "NoSuchKey" || nameOf(cause) === "NotFound"

const failure = (key: string, what: string) => (cause: unknown) =>
  cause instanceof BlobStoreError
    ? cause
    : isNotFound(cause)
      ? new BlobStoreError({ reason: "NotFound", key, message: "no blob with this key" })
      : statusOf(cause) === 412
        ? new BlobStoreError({ reason: "AlreadyExists", key, message: "a blob with this key exists" })
        : new BlobStoreError({
            reason: "Unavailable",
            key,
            message: `${what}: ${nameOf(cause) ?? "error"}${statusOf(cause) ? ` (HTTP ${statusOf(cause)})` : ""}`,
            cause
          })

export const makeS3Client = (settings: S3Settings) =>
  new S3Client({
    region: settings.region,
    forcePathStyle: settings.forcePathStyle,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    ...(Option.isSome(settings.endpoint) ? { endpoint: settings.endpoint.value.href } : {}),
    ...(Option.isSome(settings.accessKeyId) && Option.isSome(settings.secretAccessKey)
      ? {
          credentials: {
            accessKeyId: Redacted.value(settings.accessKeyId.value),
            secretAccessKey: Redacted.value(settings.secretAccessKey.value)
          }
        }
      : {})
  })

export const makeS3BlobStore = Effect.fn("BlobStore.makeS3")(function* (settings: S3Settings) {
  const client = yield* Effect.acquireRelease(
    Effect.sync(() => makeS3Client(settings)),
    (client) => Effect.sync(() => client.destroy())
  )
  const Bucket = settings.bucket

  const send = <A>(key: string, what: string, f: (signal: AbortSignal) => Promise<A>) =>
    Effect.tryPromise({ try: f, catch: failure(key, what) })

  const headObject = (key: string) =>
    send(key, "head", (abortSignal) => client.send(new HeadObjectCommand({ Bucket, Key: key }), { abortSignal })).pipe(
      Effect.map(
        (out): Option.Option<BlobMetadata> =>
          Option.some({
            key,
            size: out.ContentLength ?? 0,
            contentType: out.ContentType ?? DEFAULT_CONTENT_TYPE,
            lastModified: out.LastModified ?? new Date(0)
          })
      ),
      Effect.catchIf(
        (e: BlobStoreError) => e.reason === "NotFound",
        () => Effect.succeed(Option.none<BlobMetadata>())
      )
    )

  const put = Effect.fn("BlobStore.put")(function* (key: string, body: BlobBody, options?: PutOptions) {
    yield* validateKey(key)
    if (options?.ifAbsent && Option.isSome(yield* headObject(key))) {
      return yield* new BlobStoreError({ reason: "AlreadyExists", key, message: "a blob with this key exists" })
    }
    const ContentType = options?.contentType ?? DEFAULT_CONTENT_TYPE
    const IfNoneMatch = options?.ifAbsent ? "*" : undefined
    if (body instanceof Uint8Array) {
      yield* send(key, "put", (abortSignal) =>
        client.send(new PutObjectCommand({ Bucket, Key: key, Body: body, ContentType, IfNoneMatch }), { abortSignal })
      )
    } else {
      const readable: Readable = yield* NodeStream.toReadable(body)
      yield* Effect.tryPromise({
        try: (signal) => {
          const upload = new Upload({
            client,
            params: { Bucket, Key: key, Body: readable, ContentType, IfNoneMatch },
            partSize: 5 * 1024 * 1024,
            queueSize: 4,
            leavePartsOnError: false
          })
          signal.addEventListener("abort", () => void upload.abort())
          return upload.done()
        },
        catch: failure(key, "put")
      })
    }
    const meta = yield* headObject(key)
    return yield* Effect.fromOption(meta).pipe(Effect.mapError(failure(key, "put: blob vanished after write")))
  })

  const get = Effect.fn("BlobStore.get")(function* (key: string) {
    yield* validateKey(key)
    const out = yield* send(key, "get", (abortSignal) =>
      client.send(new GetObjectCommand({ Bucket, Key: key }), { abortSignal })
    )
    const body = out.Body as Readable | undefined
    if (body === undefined) return yield* new BlobStoreError({ reason: "Unavailable", key, message: "get: no body" })
    return NodeStream.fromReadable<Uint8Array, BlobStoreError>({ evaluate: () => body, onError: failure(key, "get") })
  })

  const head = Effect.fn("BlobStore.head")(function* (key: string) {
    yield* validateKey(key)
    return yield* headObject(key)
  })

  const list = Effect.fn("BlobStore.list")(function* (prefix: string, options?: ListOptions) {
    yield* validatePrefix(prefix)
    const out = yield* send(prefix, "list", (abortSignal) =>
      client.send(
        new ListObjectsV2Command({
          Bucket,
          Prefix: prefix === "" ? undefined : prefix,
          MaxKeys: clampLimit(options?.limit),
          ContinuationToken: options?.cursor
        }),
        { abortSignal }
      )
    )
    const items: Array<BlobSummary> = (out.Contents ?? []).flatMap((object) =>
      object.Key === undefined
        ? []
        : [{ key: object.Key, size: object.Size ?? 0, lastModified: object.LastModified ?? new Date(0) }]
    )
    return {
      items,
      nextCursor: out.IsTruncated && out.NextContinuationToken ? Option.some(out.NextContinuationToken) : Option.none()
    }
  })

  const remove = Effect.fn("BlobStore.delete")(function* (key: string) {
    yield* validateKey(key)
    yield* send(key, "delete", (abortSignal) =>
      client.send(new DeleteObjectCommand({ Bucket, Key: key }), { abortSignal })
    )
  })

  return BlobStore.of({ put, get, head, list, delete: remove })
})

export const layerS3 = (settings: S3Settings) => Layer.effect(BlobStore, makeS3BlobStore(settings))
