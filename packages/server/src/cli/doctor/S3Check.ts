/**
 * `bosun doctor`, the S3 check: when `BOSUN_S3_BUCKET` is set, a probe object under
 * `bosun-doctor/` is written, read back and deleted with the blob store's own S3 client
 * (`makeS3Client`: same endpoint, region, addressing and credentials). It calls the SDK directly
 * rather than through `BlobStore` because the port folds a missing bucket into "no blob with this
 * key", and a missing bucket, refused credentials and an unreachable endpoint need different fixes.
 */
import { randomUUID } from "node:crypto"
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3ServiceException } from "@aws-sdk/client-s3"
import { Effect, Option } from "effect"
import type { AppSettings, S3Settings } from "../../platform/config/AppConfig.ts"
import { makeS3Client } from "../../platform/storage/BlobStoreS3.ts"
import {
  CheckFailed,
  type CheckResult,
  connectionProblem,
  describeCause,
  displayUrl,
  PROBE_TIMEOUT,
  rootCode,
  runCheck,
  skipped
} from "./CheckResult.ts"

export const S3 = "S3"

const DENIED = new Set(["AccessDenied", "AllAccessDisabled", "AccountProblem"])
const BAD_CREDENTIALS = new Set(["InvalidAccessKeyId", "SignatureDoesNotMatch", "CredentialsProviderError"])

const explain = (settings: S3Settings, where: string, step: string) => (cause: unknown) => {
  const bucket = `bucket "${settings.bucket}" at ${where}`
  const name = cause instanceof Error ? cause.name : undefined
  const status = cause instanceof S3ServiceException ? cause.$metadata.httpStatusCode : undefined
  if (name === "NoSuchBucket") {
    return new CheckFailed({
      message: `${bucket} does not exist`,
      fix: "create the bucket (Bosun never creates it), or correct BOSUN_S3_BUCKET and BOSUN_S3_REGION"
    })
  }
  if (name !== undefined && BAD_CREDENTIALS.has(name)) {
    return new CheckFailed({
      message: `${bucket}: the credentials were refused (${name})`,
      fix: "set BOSUN_S3_ACCESS_KEY_ID and BOSUN_S3_SECRET_ACCESS_KEY to a valid key pair (or fix the AWS default credential chain)"
    })
  }
  if ((name !== undefined && DENIED.has(name)) || status === 403) {
    return new CheckFailed({
      message: `${bucket}: access denied to ${step} the probe object (${name ?? "HTTP 403"})`,
      fix: "grant these credentials s3:PutObject, s3:GetObject and s3:DeleteObject on the bucket"
    })
  }
  const network = connectionProblem(rootCode(cause))
  if (network !== undefined) {
    return new CheckFailed({
      message: `cannot reach the S3 endpoint ${where}: ${network}`,
      fix: "correct BOSUN_S3_ENDPOINT (and BOSUN_S3_FORCE_PATH_STYLE for MinIO and the like), or let this machine reach it"
    })
  }
  return new CheckFailed({
    message: `${bucket}: ${step} of the probe object failed: ${name ?? describeCause(cause)}${status ? ` (HTTP ${status})` : ""}`,
    fix: "check the S3 settings (docs/configuration-reference.md) and the storage service's status"
  })
}

/** Writes, reads back and deletes `bosun-doctor/<uuid>`; the SDK call is aborted when the timeout strikes. */
const probe = Effect.fn("Doctor.s3Probe")(function* (settings: S3Settings) {
  const where = Option.match(settings.endpoint, { onNone: () => "AWS S3", onSome: (url) => displayUrl(url) })
  const client = yield* Effect.acquireRelease(
    Effect.sync(() => makeS3Client(settings)),
    (client) => Effect.sync(() => client.destroy())
  )
  const Bucket = settings.bucket
  const Key = `bosun-doctor/${randomUUID()}`
  const body = `bosun doctor probe ${new Date().toISOString()}`
  const send = <A>(step: string, f: (abortSignal: AbortSignal) => Promise<A>) =>
    Effect.tryPromise({ try: f, catch: explain(settings, where, step) })

  yield* send("write", (abortSignal) =>
    client.send(new PutObjectCommand({ Bucket, Key, Body: body, ContentType: "text/plain" }), { abortSignal })
  )
  const readBack = yield* send("read", async (abortSignal) => {
    const out = await client.send(new GetObjectCommand({ Bucket, Key }), { abortSignal })
    return (await out.Body?.transformToString("utf-8")) ?? ""
  })
  yield* send("delete", (abortSignal) => client.send(new DeleteObjectCommand({ Bucket, Key }), { abortSignal }))
  if (readBack !== body) {
    return yield* new CheckFailed({
      message: `bucket "${Bucket}" at ${where} gave back other bytes than were written`,
      fix: "check what sits between Bosun and the storage service (a proxy or a gateway that rewrites bodies)"
    })
  }
  return `bucket "${Bucket}" at ${where}: a probe object was written, read back and deleted`
})

/** The S3 line: skipped without `BOSUN_S3_BUCKET`, else the probe within `PROBE_TIMEOUT`. */
export const checkS3 = (settings: AppSettings): Effect.Effect<CheckResult> =>
  Option.match(settings.s3, {
    onNone: () =>
      Effect.succeed(
        skipped(S3, `not configured (BOSUN_S3_BUCKET unset): blobs are files under ${settings.dataDir}/blobs`)
      ),
    onSome: (s3) =>
      runCheck(S3, Effect.scoped(probe(s3)), {
        timeout: PROBE_TIMEOUT,
        onTimeout: "check BOSUN_S3_ENDPOINT and BOSUN_S3_REGION, and that this machine reaches the storage service"
      })
  })
