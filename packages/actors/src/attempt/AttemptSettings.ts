/**
 * How attempts pace themselves (docs/interface.md: Limits — event flush every 1 s or 100 events; no
 * step holds a 30-minute stream). The server builds these from its `Config`.
 */
import { Context, Duration } from "effect"

export interface AttemptSettingsShape {
  /** How long one execute step tails the runtime before handing over to the next one. */
  readonly executeChunk: Duration.Duration
  /**
   * Runtime events are written to `workflow_events` at least this often... (the first event after a
   * quiet interval is written at once: see LeadingBatches)
   */
  readonly flushInterval: Duration.Duration
  /** ...or as soon as this many are waiting. */
  readonly flushMaxEvents: number
  /** How often a step that waits (prepare, acquire) renews the attempt's lease. */
  readonly heartbeatInterval: Duration.Duration
  /** Retries of a step whose failure is transient (runtime or provider unreachable), with backoff. */
  readonly stepRetries: number
  readonly stepRetryBase: Duration.Duration
}

export const DEFAULT_ATTEMPT_SETTINGS: AttemptSettingsShape = {
  executeChunk: Duration.minutes(2),
  flushInterval: Duration.seconds(1),
  flushMaxEvents: 100,
  heartbeatInterval: Duration.seconds(10),
  stepRetries: 5,
  stepRetryBase: Duration.seconds(1)
}

export const AttemptSettings = Context.Reference<AttemptSettingsShape>("bosun/actors/AttemptSettings", {
  defaultValue: () => DEFAULT_ATTEMPT_SETTINGS
})
