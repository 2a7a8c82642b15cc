/**
 * Sealed envelopes and the `Secrets` service without a database (docs/interface.md: What the
 * service does 7, Versioning 3): the byte layout, round trips, the place bound into the AAD,
 * tampering, key versions in and out of the ring, and the synchronous reseal/check used by
 * rotation.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import fc from "fast-check"
import * as Envelope from "../../../src/platform/crypto/Envelope.ts"
import { makeKeyRing, type SealedPlace, Secrets, SecretsError } from "../../../src/platform/crypto/Secrets.ts"

const keyA = Buffer.alloc(32, 0xa1).toString("base64")
const keyB = Buffer.alloc(32, 0xb2).toString("base64")
const keyC = Buffer.alloc(32, 0xc3).toString("base64")

const secretsOf = (key: string, version: number, previous: ReadonlyArray<readonly [number, string]> = []) =>
  Secrets.make(
    makeKeyRing({
      key: Redacted.make(key),
      version,
      previous: new Map(previous.map(([v, k]) => [v, Redacted.make(k)] as const))
    })
  )

const place: SealedPlace = {
  table: "integrations",
  column: "client_secret",
  rowId: "0190a7c4-1f00-7000-8000-000000000001"
}

const plaintext = "s3cr3t-plaintext-that-must-never-leak"

const utf8Length = (s: string) => Buffer.byteLength(s, "utf8")

/** Includes the empty string and code points of every UTF-8 width. */
const unicodeStrings = fc.oneof(
  fc.constant(""),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.string({ unit: "grapheme", maxLength: 200 })
)

const assertSecretsError = (
  error: unknown,
  expected: {
    readonly reason: Envelope.EnvelopeFailure
    readonly place: SealedPlace
    readonly keyVersion: number | undefined
  }
): SecretsError => {
  assert.instanceOf(error, SecretsError)
  assert.strictEqual(error._tag, "SecretsError")
  assert.strictEqual(error.reason, expected.reason)
  assert.deepStrictEqual(error.place, expected.place)
  assert.strictEqual(error.keyVersion, expected.keyVersion)
  return error
}

describe("Secrets", () => {
  describe("round trip", () => {
    it("Envelope.open returns the bytes Envelope.seal sealed, for any unicode string (property)", () => {
      const key = Buffer.from(keyA, "base64")
      fc.assert(
        fc.property(unicodeStrings, fc.integer({ min: 1, max: 0xffff_ffff }), (text, version) => {
          const envelope = Envelope.seal(key, version, Buffer.from(text, "utf8"), place)
          const opened = Envelope.open((v) => (v === version ? key : undefined), envelope, place)
          assert.notStrictEqual(typeof opened, "string")
          if (typeof opened === "string") return
          assert.strictEqual(opened.keyVersion, version)
          assert.strictEqual(opened.plaintext.toString("utf8"), text)
        })
      )
    })

    it.effect("open returns the sealed plaintext, Redacted, for any unicode string including the empty one", () =>
      Effect.gen(function* () {
        const secrets = secretsOf(keyA, 1)
        const samples = ["", plaintext, "ключ 🔑 鍵 \u0000 end", ...fc.sample(unicodeStrings, 200)]
        for (const text of samples) {
          const envelope = yield* secrets.seal(text, place)
          const opened = yield* secrets.open(envelope, place)
          assert.isTrue(Redacted.isRedacted(opened))
          assert.strictEqual(Redacted.value(opened), text)
        }
      })
    )

    it.effect("seal accepts a Redacted plaintext and seals its value", () =>
      Effect.gen(function* () {
        const secrets = secretsOf(keyA, 1)
        const envelope = yield* secrets.seal(Redacted.make(plaintext), place)
        assert.strictEqual(envelope.length, Envelope.MIN_ENVELOPE_LENGTH + utf8Length(plaintext))
        const opened = yield* secrets.open(envelope, place)
        assert.strictEqual(Redacted.value(opened), plaintext)
        assert.notInclude(String(opened), plaintext)
        assert.notInclude(JSON.stringify({ opened }), plaintext)
      })
    )
  })

  describe("envelope layout", () => {
    it.effect("is format 1, the active key version big-endian, a 12-byte nonce, the ciphertext and a 16-byte tag", () =>
      Effect.gen(function* () {
        const version = 0x01020304
        const secrets = secretsOf(keyA, version)
        assert.strictEqual(secrets.activeVersion, version)
        for (const text of ["", "a", plaintext, "€ and 🔑"]) {
          const envelope = yield* secrets.seal(text, place)
          assert.strictEqual(envelope[0], 1)
          assert.strictEqual(envelope[0], Envelope.FORMAT_VERSION)
          assert.deepStrictEqual([...envelope.subarray(1, 5)], [0x01, 0x02, 0x03, 0x04])
          assert.strictEqual(envelope.length, 5 + 12 + utf8Length(text) + 16)
          assert.strictEqual(Envelope.envelopeKeyVersion(envelope), version)
          assert.deepStrictEqual([...Envelope.keyVersionBytes(version)], [...envelope.subarray(1, 5)])
        }
      })
    )

    it("keyVersionBytes equals the envelope's bytes 1..4 and envelopeKeyVersion reads them back (property)", () => {
      const key = Buffer.from(keyA, "base64")
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 0xffff_ffff }), (version) => {
          const envelope = Envelope.seal(key, version, Buffer.from("x"), place)
          const bytes = Envelope.keyVersionBytes(version)
          assert.strictEqual(bytes.length, 4)
          assert.deepStrictEqual([...bytes], [...envelope.subarray(1, 5)])
          assert.strictEqual(Envelope.envelopeKeyVersion(envelope), version)
        })
      )
    })

    it("envelopeKeyVersion is undefined for what is not an envelope", () => {
      assert.isUndefined(Envelope.envelopeKeyVersion(new Uint8Array(0)))
      assert.isUndefined(Envelope.envelopeKeyVersion(new Uint8Array(Envelope.MIN_ENVELOPE_LENGTH - 1).fill(1)))
      const wrongFormat = new Uint8Array(Envelope.MIN_ENVELOPE_LENGTH)
      wrongFormat[0] = 2
      assert.isUndefined(Envelope.envelopeKeyVersion(wrongFormat))
    })

    it("envelopeKeyVersion reads an envelope that is a view into a larger buffer", () => {
      const envelope = Envelope.seal(Buffer.from(keyA, "base64"), 7, Buffer.from("x"), place)
      const backing = new Uint8Array(envelope.length + 10)
      backing.set(envelope, 3)
      assert.strictEqual(Envelope.envelopeKeyVersion(backing.subarray(3, 3 + envelope.length)), 7)
    })

    it.effect("two seals of the same plaintext differ (random nonce) and both open", () =>
      Effect.gen(function* () {
        const secrets = secretsOf(keyA, 1)
        const first = yield* secrets.seal(plaintext, place)
        const second = yield* secrets.seal(plaintext, place)
        assert.strictEqual(first.length, second.length)
        assert.deepStrictEqual([...first.subarray(0, 5)], [...second.subarray(0, 5)])
        assert.notDeepEqual([...first.subarray(5, 17)], [...second.subarray(5, 17)])
        assert.notDeepEqual([...first.subarray(17)], [...second.subarray(17)])
        assert.strictEqual(Redacted.value(yield* secrets.open(first, place)), plaintext)
        assert.strictEqual(Redacted.value(yield* secrets.open(second, place)), plaintext)
      })
    )
  })

  describe("the place is bound to the envelope", () => {
    const elsewhere: ReadonlyArray<readonly [string, SealedPlace]> = [
      ["another table", { ...place, table: "webhooks" }],
      ["another column", { ...place, column: "signing_secret" }],
      ["another row id", { ...place, rowId: "0190a7c4-1f00-7000-8000-000000000002" }],
      // The separator keeps the fields apart: moving a character across a boundary is another place.
      ["a shifted boundary", { table: "integrationsc", column: "lient_secret", rowId: place.rowId }]
    ]
    for (const [what, wrong] of elsewhere) {
      it.effect(`opening at ${what} fails with AuthenticationFailed naming that place, not the plaintext`, () =>
        Effect.gen(function* () {
          const secrets = secretsOf(keyA, 4)
          const envelope = yield* secrets.seal(plaintext, place)
          const error = yield* Effect.flip(secrets.open(envelope, wrong))
          assertSecretsError(error, { reason: "AuthenticationFailed", place: wrong, keyVersion: 4 })
          assert.include(error.message, `${wrong.table}.${wrong.column} of row ${wrong.rowId}`)
          assert.include(error.message, "does not open")
          assert.notInclude(error.message, plaintext)
          assert.notInclude(String(error), plaintext)
          assert.notInclude(JSON.stringify(error), plaintext)
          // Still opens where it was sealed.
          assert.strictEqual(Redacted.value(yield* secrets.open(envelope, place)), plaintext)
        })
      )
    }
  })

  describe("tampering", () => {
    it.effect(
      "flipping any single byte never opens: byte 0 is Malformed, 1..4 a version error, the rest AuthenticationFailed (property)",
      () =>
        Effect.gen(function* () {
          const activeVersion = 5
          const previousVersion = 4
          const secrets = secretsOf(keyA, activeVersion, [[previousVersion, keyB]])
          const envelope = yield* secrets.seal(plaintext, place)
          const tampered = (index: number, mask: number) => {
            const copy = Uint8Array.from(envelope)
            copy[index] = (copy[index] ?? 0) ^ mask
            return copy
          }
          const check = (index: number, mask: number) => {
            const bad = tampered(index, mask)
            const error = secrets.checkUnsafe(bad, place)
            assert.instanceOf(error, SecretsError, `byte ${index} ^ ${mask} opened`)
            if (!(error instanceof SecretsError)) return
            const resealed = secrets.resealUnsafe(bad, place)
            assert.instanceOf(resealed, SecretsError)
            if (resealed instanceof SecretsError) {
              assert.strictEqual(resealed.reason, error.reason)
              assert.strictEqual(resealed.keyVersion, error.keyVersion)
            }
            if (index === 0) {
              assertSecretsError(error, { reason: "Malformed", place, keyVersion: undefined })
            } else if (index <= 4) {
              const version = Envelope.envelopeKeyVersion(bad)
              assert.isDefined(version)
              assert.notStrictEqual(version, activeVersion)
              assertSecretsError(error, {
                reason: version === previousVersion ? "AuthenticationFailed" : "UnknownKeyVersion",
                place,
                keyVersion: version
              })
            } else {
              assertSecretsError(error, { reason: "AuthenticationFailed", place, keyVersion: activeVersion })
            }
            assert.notInclude(error.message, plaintext)
          }
          fc.assert(
            fc.property(fc.nat({ max: envelope.length - 1 }), fc.integer({ min: 1, max: 0xff }), (index, mask) =>
              check(index, mask)
            )
          )
          // Every position at least once, and the one flip that lands on a version the ring holds.
          for (let index = 0; index < envelope.length; index++) check(index, 0x01)
          check(4, activeVersion ^ previousVersion)
          const opened = yield* Effect.flip(secrets.open(tampered(envelope.length - 1, 0x80), place))
          assertSecretsError(opened, { reason: "AuthenticationFailed", place, keyVersion: activeVersion })
        })
    )

    it.effect("a truncated or extended envelope of at least 33 bytes is AuthenticationFailed", () =>
      Effect.gen(function* () {
        const secrets = secretsOf(keyA, 1)
        const envelope = yield* secrets.seal(plaintext, place)
        for (let length = Envelope.MIN_ENVELOPE_LENGTH; length < envelope.length; length++) {
          const error = yield* Effect.flip(secrets.open(envelope.subarray(0, length), place))
          assertSecretsError(error, { reason: "AuthenticationFailed", place, keyVersion: 1 })
        }
        const extended = Buffer.concat([envelope, Buffer.from([0])])
        const error = yield* Effect.flip(secrets.open(extended, place))
        assertSecretsError(error, { reason: "AuthenticationFailed", place, keyVersion: 1 })
      })
    )
  })

  describe("key versions", () => {
    it.effect("an envelope under version 1 opened by a ring of version 2 alone is UnknownKeyVersion 1", () =>
      Effect.gen(function* () {
        const envelope = yield* secretsOf(keyA, 1).seal(plaintext, place)
        const error = yield* Effect.flip(secretsOf(keyB, 2).open(envelope, place))
        assertSecretsError(error, { reason: "UnknownKeyVersion", place, keyVersion: 1 })
        assert.include(error.message, "key version 1")
        assert.include(error.message, "BOSUN_PREVIOUS_MASTER_KEYS")
        assert.include(error.message, `${place.table}.${place.column} of row ${place.rowId}`)
        assert.notInclude(error.message, plaintext)
      })
    )

    it.effect("a ring of version 2 with the old key as previous version 1 opens it", () =>
      Effect.gen(function* () {
        const envelope = yield* secretsOf(keyA, 1).seal(plaintext, place)
        const rotated = secretsOf(keyB, 2, [[1, keyA]])
        assert.strictEqual(rotated.activeVersion, 2)
        const opened = yield* rotated.open(envelope, place)
        assert.isTrue(Redacted.isRedacted(opened))
        assert.strictEqual(Redacted.value(opened), plaintext)
        assert.isUndefined(rotated.checkUnsafe(envelope, place))
      })
    )

    it.effect("a ring holding a different key under version 1 fails with AuthenticationFailed", () =>
      Effect.gen(function* () {
        const envelope = yield* secretsOf(keyA, 1).seal(plaintext, place)
        for (const ring of [secretsOf(keyC, 1), secretsOf(keyB, 2, [[1, keyC]])]) {
          const error = yield* Effect.flip(ring.open(envelope, place))
          assertSecretsError(error, { reason: "AuthenticationFailed", place, keyVersion: 1 })
          assert.include(error.message, "version 1")
          assert.notInclude(error.message, plaintext)
        }
      })
    )
  })

  describe("malformed input", () => {
    it.effect("fewer than 33 bytes is Malformed, whatever they are", () =>
      Effect.gen(function* () {
        const secrets = secretsOf(keyA, 1)
        const envelope = yield* secrets.seal("", place)
        assert.strictEqual(envelope.length, Envelope.MIN_ENVELOPE_LENGTH)
        assert.strictEqual(Envelope.MIN_ENVELOPE_LENGTH, 33)
        for (let length = 0; length < 33; length++) {
          const error = yield* Effect.flip(secrets.open(envelope.subarray(0, length), place))
          assertSecretsError(error, { reason: "Malformed", place, keyVersion: undefined })
          assert.include(error.message, "is not a Bosun envelope")
        }
        for (const garbage of fc.sample(fc.uint8Array({ maxLength: 32 }), 50)) {
          const error = yield* Effect.flip(secrets.open(garbage, place))
          assertSecretsError(error, { reason: "Malformed", place, keyVersion: undefined })
        }
      })
    )

    it.effect("a first byte other than format version 1 is Malformed", () =>
      Effect.gen(function* () {
        const secrets = secretsOf(keyA, 1)
        const envelope = yield* secrets.seal(plaintext, place)
        for (const first of [0, 2, 0x7f, 0xff]) {
          const bad = Uint8Array.from(envelope)
          bad[0] = first
          const error = yield* Effect.flip(secrets.open(bad, place))
          assertSecretsError(error, { reason: "Malformed", place, keyVersion: undefined })
          assert.include(error.message, `${place.table}.${place.column} of row ${place.rowId} is not a Bosun envelope`)
        }
        const text = new TextEncoder().encode("plain text stored where an envelope belongs, by mistake")
        const error = yield* Effect.flip(secrets.open(text, place))
        assertSecretsError(error, { reason: "Malformed", place, keyVersion: undefined })
      })
    )
  })

  describe("resealUnsafe and checkUnsafe", () => {
    it.effect("resealUnsafe returns an envelope under the active version that opens to the same plaintext", () =>
      Effect.gen(function* () {
        const old = yield* secretsOf(keyA, 1).seal(plaintext, place)
        const rotated = secretsOf(keyB, 2, [[1, keyA]])
        const resealed = rotated.resealUnsafe(old, place)
        assert.notInstanceOf(resealed, SecretsError)
        if (resealed instanceof SecretsError) return
        assert.strictEqual(resealed[0], 1)
        assert.strictEqual(Envelope.envelopeKeyVersion(resealed), 2)
        assert.deepStrictEqual([...resealed.subarray(1, 5)], [...Envelope.keyVersionBytes(2)])
        assert.strictEqual(resealed.length, old.length)
        assert.strictEqual(Redacted.value(yield* rotated.open(resealed, place)), plaintext)
        // Under the new key itself: a ring without the old key opens it too.
        assert.strictEqual(Redacted.value(yield* secretsOf(keyB, 2).open(resealed, place)), plaintext)
        // Still bound to its place.
        const moved = yield* Effect.flip(rotated.open(resealed, { ...place, rowId: "another" }))
        assertSecretsError(moved, {
          reason: "AuthenticationFailed",
          place: { ...place, rowId: "another" },
          keyVersion: 2
        })
      })
    )

    it.effect("resealUnsafe of an envelope already under the active version gives a fresh one that opens", () =>
      Effect.gen(function* () {
        const secrets = secretsOf(keyB, 2, [[1, keyA]])
        const envelope = yield* secrets.seal(plaintext, place)
        const resealed = secrets.resealUnsafe(envelope, place)
        assert.notInstanceOf(resealed, SecretsError)
        if (resealed instanceof SecretsError) return
        assert.strictEqual(Envelope.envelopeKeyVersion(resealed), 2)
        assert.notDeepEqual([...resealed], [...envelope])
        assert.strictEqual(Redacted.value(yield* secrets.open(resealed, place)), plaintext)
      })
    )

    it.effect("resealUnsafe returns, not throws, a SecretsError for an envelope that does not open", () =>
      Effect.gen(function* () {
        const envelope = yield* secretsOf(keyA, 1).seal(plaintext, place)
        const ring = secretsOf(keyB, 2)
        assertSecretsError(ring.resealUnsafe(envelope, place), { reason: "UnknownKeyVersion", place, keyVersion: 1 })
        const wrongPlace = { ...place, column: "other" }
        assertSecretsError(secretsOf(keyB, 2, [[1, keyA]]).resealUnsafe(envelope, wrongPlace), {
          reason: "AuthenticationFailed",
          place: wrongPlace,
          keyVersion: 1
        })
        assertSecretsError(ring.resealUnsafe(new Uint8Array(3), place), {
          reason: "Malformed",
          place,
          keyVersion: undefined
        })
      })
    )

    it.effect("checkUnsafe is undefined for an envelope that opens and a SecretsError otherwise", () =>
      Effect.gen(function* () {
        const secrets = secretsOf(keyB, 2, [[1, keyA]])
        const current = yield* secrets.seal(plaintext, place)
        const old = yield* secretsOf(keyA, 1).seal(plaintext, place)
        const unknown = yield* secretsOf(keyC, 3).seal(plaintext, place)
        assert.isUndefined(secrets.checkUnsafe(current, place))
        assert.isUndefined(secrets.checkUnsafe(old, place))
        assertSecretsError(secrets.checkUnsafe(unknown, place), { reason: "UnknownKeyVersion", place, keyVersion: 3 })
        const wrongRow = { ...place, rowId: "x" }
        assertSecretsError(secrets.checkUnsafe(current, wrongRow), {
          reason: "AuthenticationFailed",
          place: wrongRow,
          keyVersion: 2
        })
        assertSecretsError(secrets.checkUnsafe(current.subarray(0, 10), place), {
          reason: "Malformed",
          place,
          keyVersion: undefined
        })
      })
    )
  })
})
