/**
 * Opaque keyset cursors for newest-first lists (docs/interface.md: Organization endpoints, pull
 * requests `cursor`). A cursor names a direction and the sort key of the row it starts after — its
 * `updated_at` in microseconds and its id — so rows inserted meanwhile never shift a page; it is
 * base64url JSON, which clients treat as opaque. A cursor that does not decode is rejected.
 */
import { Option, Schema } from "effect"

export interface SortKey {
  /** `updated_at` as microseconds since the epoch, as Postgres keeps it (a JS Date has only ms). */
  readonly micros: string
  readonly id: string
}

const CursorJson = Schema.Struct({
  d: Schema.Literals(["next", "prev"]),
  // A bigint: at most 19 digits and no larger than 2^63 - 1.
  u: Schema.String.check(
    Schema.isPattern(/^\d{1,19}$/),
    Schema.makeFilter((digits: string) => (BigInt(digits) <= 9223372036854775807n ? undefined : "out of range"))
  ),
  i: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128))
})
const decodeJson = Schema.decodeUnknownOption(Schema.fromJsonString(CursorJson))

export interface PageCursor {
  readonly direction: "next" | "prev"
  readonly key: SortKey
}

export const encodeCursor = (cursor: PageCursor): string =>
  Buffer.from(JSON.stringify({ d: cursor.direction, u: cursor.key.micros, i: cursor.key.id })).toString("base64url")

export const decodeCursor = (text: string): Option.Option<PageCursor> =>
  /^[A-Za-z0-9_-]+$/.test(text)
    ? Option.map(decodeJson(Buffer.from(text, "base64url").toString("utf8")), (json) => ({
        direction: json.d,
        key: { micros: json.u, id: json.i }
      }))
    : Option.none()
