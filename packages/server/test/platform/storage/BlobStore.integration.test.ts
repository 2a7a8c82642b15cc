/**
 * Both blob store adapters against the same conformance suite: the file system one in a fresh
 * directory, the S3 one against a real S3-protocol server (s3rver) in a fresh bucket. Plus what
 * only the file system adapter can show: no key, however crafted, writes outside its root.
 */

import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { CreateBucketCommand } from "@aws-sdk/client-s3"
import { provided } from "@bosun/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import * as fc from "fast-check"
import type { S3Settings } from "../../../src/platform/config/AppConfig.ts"
import { keyProblem } from "../../../src/platform/storage/BlobStore.ts"
import { layerFileSystem, makeFileSystemBlobStore } from "../../../src/platform/storage/BlobStoreFileSystem.ts"
import { layerS3, makeS3Client } from "../../../src/platform/storage/BlobStoreS3.ts"
import { blobStoreConformance, collect } from "./BlobStoreConformance.ts"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "bosun-blobs-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const fileSystemStore = Layer.unwrap(Effect.map(tempDir, (dir) => layerFileSystem(path.join(dir, "blobs"))))

export const s3Settings = (bucket: string): S3Settings => ({
  bucket,
  endpoint: Option.some(new URL(provided("bosun.s3Endpoint"))),
  region: "us-east-1",
  forcePathStyle: true,
  accessKeyId: Option.some(Redacted.make("S3RVER")),
  secretAccessKey: Option.some(Redacted.make("S3RVER"))
})

const s3Store = Layer.unwrap(
  Effect.gen(function* () {
    const settings = s3Settings(`conformance-${randomBytes(4).toString("hex")}`)
    const client = makeS3Client(settings)
    yield* Effect.promise(() => client.send(new CreateBucketCommand({ Bucket: settings.bucket })))
    client.destroy()
    return layerS3(settings)
  })
)

blobStoreConformance("file system", fileSystemStore)
blobStoreConformance("S3 (s3rver)", s3Store)

describe("file system blob store containment", () => {
  it.live("never creates a file outside its root, whatever the key (property)", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const root = path.join(dir, "store")
      const store = yield* makeFileSystemBlobStore(root)
      const segment = fc.oneof(
        fc.constantFrom("..", ".", "", "a", "b", "%2e%2e", "~", "\\", "\0"),
        fc.string({ maxLength: 6 })
      )
      const keys = fc.array(segment, { minLength: 1, maxLength: 5 }).map((segments) => segments.join("/"))
      const samples = fc.sample(
        fc.oneof(
          keys,
          fc.string({ maxLength: 20 }).map((s) => `/${s}`)
        ),
        300
      )
      for (const key of samples) {
        const result = yield* Effect.result(store.put(key, new TextEncoder().encode(key)))
        if (keyProblem(key) === undefined) {
          assert.strictEqual(result._tag, "Success", JSON.stringify(key))
          const back = yield* Effect.flatMap(store.get(key), collect)
          assert.strictEqual(back.toString(), key)
        } else {
          assert.strictEqual(result._tag, "Failure", JSON.stringify(key))
        }
      }
      const outside = (yield* Effect.promise(() => fs.readdir(dir))).filter((name) => name !== "store")
      assert.deepStrictEqual(outside, [])
    })
  )
})
