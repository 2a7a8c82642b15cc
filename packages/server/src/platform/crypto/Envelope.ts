/**
 * The sealed-envelope format (docs/interface.md: What the service does 7, Versioning 3; Design rules).
 * Pure functions over `node:crypto`; the `Secrets` service wraps them with the key ring.
 *
 * Layout, version 1 (bytes):
 *
 * | offset | length | field |
 * | --- | --- | --- |
 * | 0 | 1 | format version (1) |
 * | 1 | 4 | master-key version, unsigned big-endian |
 * | 5 | 12 | random nonce |
 * | 17 | n | AES-256-GCM ciphertext |
 * | 17+n | 16 | GCM tag |
 *
 * The additional authenticated data is the 5-byte header followed by the envelope's place —
 * table, column and row id — so an envelope copied to another row, or whose header was edited,
 * does not open. The key version sits at a fixed offset so SQL can find envelopes under an old
 * key (`substring(col from 2 for 4)`) without opening them.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"

export const FORMAT_VERSION = 1
export const HEADER_LENGTH = 5
const NONCE_LENGTH = 12
const TAG_LENGTH = 16
export const MIN_ENVELOPE_LENGTH = HEADER_LENGTH + NONCE_LENGTH + TAG_LENGTH

/** Where an envelope lives: it opens only there. */
export interface SealedPlace {
  readonly table: string
  readonly column: string
  readonly rowId: string
}

export type EnvelopeFailure = "Malformed" | "UnknownKeyVersion" | "AuthenticationFailed"

/** The 4 bytes SQL compares against an envelope's key version field. */
export const keyVersionBytes = (version: number): Uint8Array => {
  const bytes = new Uint8Array(4)
  new DataView(bytes.buffer).setUint32(0, version)
  return bytes
}

const header = (keyVersion: number): Buffer => {
  const bytes = Buffer.alloc(HEADER_LENGTH)
  bytes[0] = FORMAT_VERSION
  bytes.writeUInt32BE(keyVersion, 1)
  return bytes
}

const aadOf = (head: Uint8Array, place: SealedPlace): Buffer =>
  Buffer.concat([head, Buffer.from(`bosun:${place.table}\u0000${place.column}\u0000${place.rowId}`, "utf8")])

/** The key version an envelope says it was sealed under, or undefined when it is not an envelope. */
export const envelopeKeyVersion = (envelope: Uint8Array): number | undefined =>
  envelope.length >= MIN_ENVELOPE_LENGTH && envelope[0] === FORMAT_VERSION
    ? Buffer.from(envelope.buffer, envelope.byteOffset, envelope.byteLength).readUInt32BE(1)
    : undefined

export const seal = (key: Uint8Array, keyVersion: number, plaintext: Uint8Array, place: SealedPlace): Uint8Array => {
  const head = header(keyVersion)
  const nonce = randomBytes(NONCE_LENGTH)
  const cipher = createCipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_LENGTH })
  cipher.setAAD(aadOf(head, place))
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return Buffer.concat([head, nonce, body, cipher.getAuthTag()])
}

/**
 * Opens an envelope with the key its header names (`keyFor` looks it up in the ring). GCM does
 * not say why a tag check failed: a wrong place, a tampered byte and a wrong key all read as
 * `AuthenticationFailed`.
 */
export const open = (
  keyFor: (version: number) => Uint8Array | undefined,
  envelope: Uint8Array,
  place: SealedPlace
): { readonly plaintext: Buffer; readonly keyVersion: number } | EnvelopeFailure => {
  const keyVersion = envelopeKeyVersion(envelope)
  if (keyVersion === undefined) return "Malformed"
  const key = keyFor(keyVersion)
  if (key === undefined) return "UnknownKeyVersion"
  const bytes = Buffer.from(envelope.buffer, envelope.byteOffset, envelope.byteLength)
  const nonce = bytes.subarray(HEADER_LENGTH, HEADER_LENGTH + NONCE_LENGTH)
  const body = bytes.subarray(HEADER_LENGTH + NONCE_LENGTH, bytes.length - TAG_LENGTH)
  const tag = bytes.subarray(bytes.length - TAG_LENGTH)
  const decipher = createDecipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_LENGTH })
  decipher.setAAD(aadOf(bytes.subarray(0, HEADER_LENGTH), place))
  decipher.setAuthTag(tag)
  const plaintext = decipher.update(body)
  try {
    return { plaintext: Buffer.concat([plaintext, decipher.final()]), keyVersion }
  } catch {
    // `final` throws exactly when the tag does not verify.
    return "AuthenticationFailed"
  }
}
