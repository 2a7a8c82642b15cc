/**
 * A failed call to a chat or tracker provider (Slack, Linear), in the terms the effects consumer
 * acts on: `RateLimited` carries the provider's `Retry-After`, which the consumer waits out before
 * calling again; the others fail the delivery, which the queue retries and finally dead-letters
 * with this message.
 *
 * Messages name the provider, the method and the provider's own error code, never the request:
 * a token or a message body must not reach a log or a dead letter.
 */
import { Data, type Duration } from "effect"

export class ProviderCallError extends Data.TaggedError("ProviderCallError")<{
  readonly provider: "slack" | "linear"
  /**
   * NotConnected: the organization has no connection (or no token) for the provider;
   * Refused: the provider answered with an error about the request or the credentials;
   * RateLimited: the provider asked to wait `retryAfter`; Unavailable: unreachable or failing.
   */
  readonly reason: "NotConnected" | "Refused" | "RateLimited" | "Unavailable"
  readonly message: string
  readonly retryAfter?: Duration.Duration | undefined
}> {}
