/**
 * Sealing and opening of every secret Bosun keeps (docs/interface.md: What the service does 7,
 * Authentication 5/7, Versioning 3). Every sealed column goes through this service and nothing else
 * touches a master key: the ring is the active key (`BOSUN_MASTER_KEY`, `BOSUN_MASTER_KEY_VERSION`)
 * plus the older ones (`BOSUN_PREVIOUS_MASTER_KEYS`), already validated by `AppConfig`.
 *
 * Plaintext comes back `Redacted`, so it cannot reach a log line or an error by accident; errors
 * name the envelope's place and the failure, never its contents.
 */
import { createHmac } from "node:crypto"
import { Context, Data, Effect, Layer, Redacted } from "effect"
import { InstanceSecrets } from "../config/InstanceSecrets.ts"
import * as Envelope from "./Envelope.ts"

export type { SealedPlace } from "./Envelope.ts"

export class SecretsError extends Data.TaggedError("SecretsError")<{
  readonly reason: Envelope.EnvelopeFailure
  readonly place: Envelope.SealedPlace
  readonly keyVersion: number | undefined
}> {
  override get message() {
    const where = `${this.place.table}.${this.place.column} of row ${this.place.rowId}`
    const reasons: Record<Envelope.EnvelopeFailure, string> = {
      Malformed: `the value in ${where} is not a Bosun envelope`,
      UnknownKeyVersion: `the envelope in ${where} is sealed under key version ${this.keyVersion}, which is not in the key ring (BOSUN_PREVIOUS_MASTER_KEYS)`,
      AuthenticationFailed: `the envelope in ${where} does not open: it was tampered with, copied from elsewhere, or sealed under another key of version ${this.keyVersion}`
    }
    return reasons[this.reason]
  }
}

export interface KeyRing {
  readonly activeVersion: number
  readonly activeKey: Uint8Array
  readonly keyFor: (version: number) => Uint8Array | undefined
}

export const makeKeyRing = (settings: {
  readonly key: Redacted.Redacted<string>
  readonly version: number
  readonly previous: ReadonlyMap<number, Redacted.Redacted<string>>
}): KeyRing => {
  const keys = new Map<number, Uint8Array>()
  for (const [version, key] of settings.previous) keys.set(version, Buffer.from(Redacted.value(key), "base64"))
  const activeKey = Buffer.from(Redacted.value(settings.key), "base64")
  keys.set(settings.version, activeKey)
  return { activeVersion: settings.version, activeKey, keyFor: (version) => keys.get(version) }
}

export class Secrets extends Context.Service<
  Secrets,
  {
    /** The version new envelopes are sealed under. */
    readonly activeVersion: number
    /**
     * Names the active key without revealing it (HMAC-SHA256 of a fixed label, 16 hex digits):
     * two processes with the same version but different keys disagree on it.
     */
    readonly activeFingerprint: string
    /** Whether the ring holds a key of this version. */
    readonly hasKey: (version: number) => boolean
    readonly seal: (
      plaintext: string | Redacted.Redacted<string>,
      place: Envelope.SealedPlace
    ) => Effect.Effect<Uint8Array>
    readonly open: (
      envelope: Uint8Array,
      place: Envelope.SealedPlace
    ) => Effect.Effect<Redacted.Redacted<string>, SecretsError>
    /**
     * Opens and seals again under the active key; rotation's unit of work. Synchronous: the
     * rotation loop calls it for whole batches.
     */
    readonly resealUnsafe: (envelope: Uint8Array, place: Envelope.SealedPlace) => Uint8Array | SecretsError
    /** Whether the envelope opens with some key of the ring (a dry run's check). */
    readonly checkUnsafe: (envelope: Uint8Array, place: Envelope.SealedPlace) => SecretsError | undefined
  }
>()("bosun/server/crypto/Secrets") {
  static readonly make = (ring: KeyRing) => {
    const failure = (reason: Envelope.EnvelopeFailure, envelope: Uint8Array, place: Envelope.SealedPlace) =>
      new SecretsError({ reason, place, keyVersion: Envelope.envelopeKeyVersion(envelope) })
    const openUnsafe = (envelope: Uint8Array, place: Envelope.SealedPlace) => {
      const opened = Envelope.open(ring.keyFor, envelope, place)
      return typeof opened === "string" ? failure(opened, envelope, place) : opened.plaintext
    }
    const sealBytes = (plaintext: Uint8Array, place: Envelope.SealedPlace) =>
      Envelope.seal(ring.activeKey, ring.activeVersion, plaintext, place)
    return Secrets.of({
      activeVersion: ring.activeVersion,
      activeFingerprint: createHmac("sha256", ring.activeKey)
        .update("bosun:key-fingerprint")
        .digest("hex")
        .slice(0, 16),
      hasKey: (version) => ring.keyFor(version) !== undefined,
      seal: (plaintext, place) =>
        Effect.sync(() =>
          sealBytes(Buffer.from(Redacted.isRedacted(plaintext) ? Redacted.value(plaintext) : plaintext, "utf8"), place)
        ),
      open: (envelope, place) =>
        Effect.suspend(() => {
          const opened = openUnsafe(envelope, place)
          return opened instanceof SecretsError
            ? Effect.fail(opened)
            : Effect.succeed(Redacted.make(opened.toString("utf8")))
        }),
      resealUnsafe: (envelope, place) => {
        const opened = openUnsafe(envelope, place)
        return opened instanceof SecretsError ? opened : sealBytes(opened, place)
      },
      checkUnsafe: (envelope, place) => {
        const opened = openUnsafe(envelope, place)
        return opened instanceof SecretsError ? opened : undefined
      }
    })
  }

  /** The ring of this instance's configuration. */
  static readonly layer = Layer.effect(
    Secrets,
    Effect.map(InstanceSecrets, (instance) => Secrets.make(makeKeyRing(instance.masterKey)))
  )
}
