/**
 * Polls a real condition with a deadline instead of sleeping (docs/interface.md: Design rules).
 */
import { Duration, Effect, Schedule } from "effect"

export const eventually = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  done: (a: A) => boolean,
  deadline: Duration.Duration = Duration.seconds(15)
): Effect.Effect<A, E | "condition not met before the deadline", R> =>
  effect.pipe(
    Effect.flatMap((a) =>
      done(a) ? Effect.succeed(a) : Effect.fail("condition not met before the deadline" as const)
    ),
    Effect.retry(Schedule.spaced(Duration.millis(50)).pipe(Schedule.upTo({ duration: deadline })))
  )
