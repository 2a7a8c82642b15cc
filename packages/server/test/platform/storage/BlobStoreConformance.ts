/**
 * The one behaviour every blob store adapter must have (docs/interface.md: Design rules, "the same
 * conformance test suite runs against every adapter"). `blobStoreConformance` registers the suite
 * for one adapter layer.
 */

import { createHash, randomBytes } from "node:crypto"
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option, Stream } from "effect"
import { BlobKeys, BlobStore, type BlobStoreError } from "../../../src/platform/storage/BlobStore.ts"

const bytes = (text: string) => new TextEncoder().encode(text)

export const collect = (stream: Stream.Stream<Uint8Array, BlobStoreError>) =>
  Effect.map(Stream.runCollect(stream), (chunks) => Buffer.concat(chunks.map((c) => Buffer.from(c))))

const readBlob = (key: string) => Effect.flatMap(BlobStore, (store) => Effect.flatMap(store.get(key), collect))

const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex")

/** A stream of `total` pseudo-random bytes in chunks of `chunk`, and the digest it will have. */
const randomStream = (total: number, chunk: number) => {
  const data = randomBytes(total)
  const chunks: Array<Uint8Array> = []
  for (let offset = 0; offset < total; offset += chunk) chunks.push(data.subarray(offset, offset + chunk))
  return { stream: Stream.fromIterable(chunks), digest: sha256(data) }
}

const badKeys: ReadonlyArray<readonly [string, string]> = [
  ["empty", ""],
  ["absolute", "/etc/passwd"],
  ["parent segment", "runs/../../../etc/passwd"],
  ["lone parent", ".."],
  ["dot segment", "a/./b"],
  ["NUL byte", "a\0b"],
  ["backslash", "a\\..\\b"],
  ["empty segment", "a//b"],
  ["trailing slash", "a/b/"],
  ["over 1024 bytes", "k".repeat(1025)],
  ["over 1024 bytes in UTF-8", "é".repeat(513)]
]

export const blobStoreConformance = <E>(name: string, store: Layer.Layer<BlobStore, E>) =>
  layer(store, { excludeTestServices: true, timeout: "120 seconds" })(`BlobStore conformance: ${name}`, (it) => {
    it.effect("puts bytes and gets them back, with size and content type", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const key = BlobKeys.runRequest("run-1", 1)
        assert.strictEqual(key, "runs/run-1/1/request.enc")
        const written = yield* store.put(key, bytes("sealed request"), { contentType: "application/octet-stream" })
        assert.strictEqual(written.key, key)
        assert.strictEqual(written.size, 14)
        assert.strictEqual(written.contentType, "application/octet-stream")
        assert.instanceOf(written.lastModified, Date)
        assert.strictEqual((yield* readBlob(key)).toString(), "sealed request")
        const head = yield* store.head(key)
        assert.isTrue(Option.isSome(head))
        assert.strictEqual(Option.getOrThrow(head).size, 14)
      })
    )

    it.effect("keeps the content type given at put time", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const key = BlobKeys.artifact("run-ct", 1, "report.html")
        yield* store.put(key, bytes("<html></html>"), { contentType: "text/html; charset=utf-8" })
        assert.strictEqual(Option.getOrThrow(yield* store.head(key)).contentType, "text/html; charset=utf-8")
        yield* store.put("ct/default", bytes("x"))
        assert.strictEqual(Option.getOrThrow(yield* store.head("ct/default")).contentType, "application/octet-stream")
      })
    )

    it.effect("puts a stream of many chunks and streams it back", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const { digest, stream } = randomStream(300_000, 7_001)
        const written = yield* store.put(BlobKeys.workspaceDiff("run-s", 2), stream, { contentType: "text/x-diff" })
        assert.strictEqual(written.size, 300_000)
        assert.strictEqual(sha256(yield* readBlob(BlobKeys.workspaceDiff("run-s", 2))), digest)
      })
    )

    it.effect("puts a 20 MB stream (multipart) and streams it back byte for byte", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const { digest, stream } = randomStream(20 * 1024 * 1024, 1024 * 1024)
        const key = BlobKeys.output("run-big", 1, "dist/bundle.tar")
        const written = yield* store.put(key, stream)
        assert.strictEqual(written.size, 20 * 1024 * 1024)
        const got = yield* store.get(key)
        let chunks = 0
        const hash = createHash("sha256")
        yield* Stream.runForEach(got, (chunk) =>
          Effect.sync(() => {
            chunks++
            hash.update(chunk)
          })
        )
        assert.strictEqual(hash.digest("hex"), digest)
        assert.isAbove(chunks, 1, "the body arrives as a stream, not one buffer")
      })
    )

    it.effect("overwrites by default and refuses with AlreadyExists when ifAbsent", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        yield* store.put("over/write", bytes("one"))
        yield* store.put("over/write", bytes("two"))
        assert.strictEqual((yield* readBlob("over/write")).toString(), "two")
        yield* store.put("once/only", bytes("first"), { ifAbsent: true })
        const error = yield* Effect.flip(store.put("once/only", bytes("second"), { ifAbsent: true }))
        assert.strictEqual(error.reason, "AlreadyExists")
        assert.strictEqual((yield* readBlob("once/only")).toString(), "first")
      })
    )

    it.effect("reports a missing blob: get NotFound, head none, delete succeeds", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const error = yield* Effect.flip(store.get("missing/blob"))
        assert.strictEqual(error._tag, "BlobStoreError")
        assert.strictEqual(error.reason, "NotFound")
        assert.isTrue(Option.isNone(yield* store.head("missing/blob")))
        yield* store.delete("missing/blob")
        yield* store.put("gone/soon", bytes("x"))
        yield* store.delete("gone/soon")
        assert.strictEqual((yield* Effect.flip(store.get("gone/soon"))).reason, "NotFound")
      })
    )

    it.effect("lets a key and a longer key under it coexist ('a' and 'a/b')", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        yield* store.put("nest/a", bytes("file a"))
        yield* store.put("nest/a/b", bytes("file a/b"))
        assert.strictEqual((yield* readBlob("nest/a")).toString(), "file a")
        assert.strictEqual((yield* readBlob("nest/a/b")).toString(), "file a/b")
        // Order is the listing test's business (s3rver, unlike S3, lists "a/b" before "a").
        const listed = yield* store.list("nest/")
        assert.deepStrictEqual(listed.items.map((i) => i.key).sort(), ["nest/a", "nest/a/b"])
      })
    )

    it.effect("lists by plain prefix in byte order, paged with a cursor", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const keys = ["list/1", "list/10", "list/2", "list/20/x", "list/3", "lister/9", "other/1"]
        for (const key of keys) yield* store.put(key, bytes(key))
        const all = yield* store.list("list/")
        assert.deepStrictEqual(
          all.items.map((i) => i.key),
          ["list/1", "list/10", "list/2", "list/20/x", "list/3"]
        )
        assert.strictEqual(all.items[0]?.size, 6)
        assert.isTrue(Option.isNone(all.nextCursor))
        assert.deepStrictEqual(
          (yield* store.list("list/1")).items.map((i) => i.key),
          ["list/1", "list/10"]
        )
        assert.deepStrictEqual(
          (yield* store.list("list")).items.map((i) => i.key),
          ["list/1", "list/10", "list/2", "list/20/x", "list/3", "lister/9"]
        )
        const seen: Array<string> = []
        let cursor: string | undefined
        let pages = 0
        do {
          const page = yield* store.list("list/", { limit: 2, ...(cursor === undefined ? {} : { cursor }) })
          assert.isAtMost(page.items.length, 2)
          seen.push(...page.items.map((i) => i.key))
          cursor = Option.getOrUndefined(page.nextCursor)
          pages++
        } while (cursor !== undefined && pages < 10)
        assert.strictEqual(pages, 3)
        assert.deepStrictEqual(seen, ["list/1", "list/10", "list/2", "list/20/x", "list/3"])
        assert.deepStrictEqual((yield* store.list("nothing-here/")).items, [])
      })
    )

    for (const [what, key] of badKeys) {
      it.effect(`refuses a key that is ${what} with InvalidKey, for every operation, writing nothing`, () =>
        Effect.gen(function* () {
          const store = yield* BlobStore
          const before = (yield* store.list("")).items.length
          for (const op of [
            store.put(key, bytes("x")),
            store.get(key),
            store.head(key),
            store.delete(key)
          ] as ReadonlyArray<Effect.Effect<unknown, BlobStoreError>>) {
            const error = yield* Effect.flip(op)
            assert.strictEqual(error.reason, "InvalidKey")
          }
          assert.strictEqual((yield* store.list("")).items.length, before)
        })
      )
    }
  })
