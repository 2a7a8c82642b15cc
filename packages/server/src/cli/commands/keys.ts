/**
 * `bosun keys generate`: a new master key, 32 random bytes in base64, for `BOSUN_MASTER_KEY`
 * (docs/interface.md: Secret-rotation procedure 1). It reads no configuration and touches no database.
 */
import { randomBytes } from "node:crypto"
import { Console } from "effect"
import { Command } from "effect/cli"

const generate = Command.make("generate", {}, () => Console.log(randomBytes(32).toString("base64"))).pipe(
  Command.withDescription("Print a new master key (base64 of 32 random bytes)")
)

export const keys = Command.make("keys").pipe(
  Command.withDescription("Master keys"),
  Command.withSubcommands([generate])
)
