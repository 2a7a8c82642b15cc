/**
 * Text that Bosun sends as an HTTP header value (a bot token, an API key): the client libraries
 * throw on anything a header cannot carry, so such a value is refused where it arrives, as a 400
 * naming its field, never discovered later as a provider outage.
 */
import { Schema } from "effect"

/** 1..`max` characters of visible ASCII (no spaces, no control characters). */
export const HeaderSafeText = (max: number) =>
  Schema.String.check(
    Schema.isMinLength(1),
    Schema.isMaxLength(max),
    Schema.isPattern(/^[\x21-\x7e]+$/, { message: "must be visible ASCII only (it is sent in an HTTP header)" })
  )
