/**
 * `bosun doctor`: checks the configuration, the database and its migrations, Redis, S3, the
 * GitHub Apps, the agent runtime and the key ring (`cli/doctor/Doctor.ts`), and prints one line per
 * check on stdout — `ok`, `FAIL` with what is wrong and what to do, or `skipped` with why. Exit 0
 * when nothing failed, 1 otherwise. It changes nothing: no migration, no embedded Postgres, no
 * rotation, no database write. No printed line carries a secret of the configuration.
 */
import { Console, Effect } from "effect"
import { Command } from "effect/cli"
import { CliFailure } from "../CliFailure.ts"
import { renderLine } from "../doctor/CheckResult.ts"
import { runDoctor } from "../doctor/Doctor.ts"

/** Every occurrence of a secret replaced: a last guard behind checks that never print one. */
const scrub = (line: string, secrets: ReadonlyArray<string>) =>
  secrets.reduce((text, secret) => text.split(secret).join("***"), line)

export const doctor = Command.make(
  "doctor",
  {},
  Effect.fn(function* () {
    const report = yield* runDoctor()
    for (const result of report.results) yield* Console.log(scrub(renderLine(result), report.secrets))
    const failures = report.results.filter((result) => result.status === "FAIL").length
    if (failures > 0) {
      return yield* new CliFailure({
        message: `doctor: ${failures} of ${report.results.length} checks failed (the FAIL lines say what to do)`
      })
    }
  })
).pipe(
  Command.withDescription(
    "Check the configuration, database, migrations, Redis, S3, GitHub Apps, agent runtime and key ring; change nothing"
  )
)
