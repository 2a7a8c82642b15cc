/**
 * Identifier schemas shared by every contract (docs/interface.md: Endpoints; Limits).
 */
import { Schema } from "effect"

/** Path ids (`organization_id`, `repository_id`, `memory_id`, ...): strings of length 1..128. */
export const PathId = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128))

/** `channel_id`: a string of length 1..255. */
export const ChannelId = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(255))

/** `provider_id` of the agent-connection api-key path. */
export const ProviderId = Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9._-]{0,127}$/))

/** An inbound `X-Request-ID` is reused only when it matches this (docs/interface.md: Errors 3). */
export const RequestIdPattern = /^[A-Za-z0-9._-]{1,128}$/
