/**
 * A command that did not do what it was asked: `main` prints its message as one line on stderr
 * and exits 1 (no stack trace; the message never carries a secret).
 */
import { Data } from "effect"

export class CliFailure extends Data.TaggedError("CliFailure")<{ readonly message: string }> {}
