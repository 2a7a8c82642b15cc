/**
 * The instance's own secrets: the master key ring, the bootstrap token and, on the embedded
 * default, the embedded Postgres password (docs/interface.md: Secret-rotation procedure 2; docs/getting-started.md: The embedded defaults).
 *
 * With `DATABASE_URL` set (a real deployment) they come from the environment only, and a missing
 * `BOSUN_MASTER_KEY` stops start-up: generating one into a pod's disk would lose every secret on
 * the next restart. Without it (the embedded default), what the environment does not give is
 * generated once into `BOSUN_DATA_DIR/secrets.json` (mode 0600) and reused on every later start.
 *
 * `BOSUN_DATA_DIR` itself is the server's alone (docs/agent-isolation.md): created 0700, and an
 * existing one loses every permission for others (an earlier Bosun made it 0711) and all but
 * search for its group — which, as root, the embedded Postgres then sets to `postgres` (0710), so
 * that its user alone can pass through to its own data directory.
 */

import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Context, Data, Effect, Layer, Option, Redacted, Schema } from "effect"
import { AppConfig, type AppSettings, type MasterKeySettings } from "./AppConfig.ts"

export class StartupError extends Data.TaggedError("StartupError")<{
  readonly message: string
}> {}

const SecretsFile = Schema.Struct({
  master_key: Schema.String,
  master_key_version: Schema.Int,
  bootstrap_token: Schema.String,
  postgres_password: Schema.String,
  created_at: Schema.String
})
type SecretsFile = typeof SecretsFile.Type

export interface InstanceSecretsShape {
  readonly masterKey: MasterKeySettings
  readonly bootstrapToken: Option.Option<Redacted.Redacted<string>>
  /** Present on the embedded default only. */
  readonly embedded: Option.Option<EmbeddedSecrets>
}

export interface EmbeddedSecrets {
  readonly postgresPassword: Redacted.Redacted<string>
  readonly secretsFile: string
  /** Whether the bootstrap token is the generated one (false: it came from `BOSUN_BOOTSTRAP_TOKEN`). */
  readonly generatedBootstrapToken: boolean
}

const generate = (): SecretsFile => ({
  master_key: randomBytes(32).toString("base64"),
  master_key_version: 1,
  bootstrap_token: randomBytes(32).toString("base64url"),
  postgres_password: randomBytes(24).toString("base64url"),
  created_at: new Date().toISOString()
})

const decodeFile = Schema.decodeUnknownEffect(Schema.fromJsonString(SecretsFile))

/** A secrets file read from disk: where it is and what it holds. */
export interface LoadedSecretsFile {
  readonly file: string
  readonly secrets: SecretsFile
}

const decodeAt = (file: string, text: string) =>
  decodeFile(text).pipe(
    Effect.mapError(() => new StartupError({ message: `${file} is not a valid Bosun secrets file` }))
  )

/**
 * Reads `secrets.json` when it exists and never creates it: for `bosun doctor`, which changes
 * nothing. None: this instance has never started on the embedded default.
 */
export const readSecretsFile = Effect.fn("InstanceSecrets.readSecretsFile")(function* (dataDir: string) {
  const file = path.join(dataDir, "secrets.json")
  const text = yield* Effect.tryPromise({
    try: () =>
      fs.readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return undefined
        throw error
      }),
    catch: (cause) =>
      new StartupError({ message: `${file}: cannot read: ${cause instanceof Error ? cause.message : String(cause)}` })
  })
  if (text === undefined) return Option.none<LoadedSecretsFile>()
  return Option.some<LoadedSecretsFile>({ file, secrets: yield* decodeAt(file, text) })
})

/**
 * Creates `dir` (0700) or takes from an existing one every permission of others and all but
 * search of its group (as root, the embedded Postgres's group: see the header). Not root, it is 0700.
 */
export const ensurePrivateDirectory = async (dir: string): Promise<void> => {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 })
  const { mode } = await fs.stat(dir)
  const wanted = process.getuid?.() === 0 ? mode & 0o710 : 0o700
  if ((mode & 0o7777) !== wanted) await fs.chmod(dir, wanted)
}

/** Reads `secrets.json`, or creates it (exclusively, so two first starts cannot both write it). */
export const loadOrCreateSecretsFile = Effect.fn("InstanceSecrets.loadOrCreate")(function* (dataDir: string) {
  const file = path.join(dataDir, "secrets.json")
  const fail = (what: string) => (cause: unknown) =>
    new StartupError({ message: `${file}: ${what}: ${cause instanceof Error ? cause.message : String(cause)}` })
  yield* Effect.tryPromise({
    try: () => ensurePrivateDirectory(dataDir),
    catch: fail("cannot create")
  })
  const fresh = generate()
  // Written whole to a temporary file, then linked into place: link fails if another start won
  // the race, and no reader ever sees a half-written file.
  const created = yield* Effect.tryPromise({
    try: async () => {
      const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`
      await fs.writeFile(tmp, `${JSON.stringify(fresh, null, 2)}\n`, { mode: 0o600, flag: "wx" })
      return fs
        .link(tmp, file)
        .then(
          () => true,
          (error: NodeJS.ErrnoException) => (error.code === "EEXIST" ? false : Promise.reject(error))
        )
        .finally(() => fs.rm(tmp, { force: true }))
    },
    catch: fail("cannot write")
  })
  if (created) return { file, secrets: fresh, created }
  const text = yield* Effect.tryPromise({ try: () => fs.readFile(file, "utf8"), catch: fail("cannot read") })
  return { file, secrets: yield* decodeAt(file, text), created }
})

/**
 * The instance secrets of `config`: from the environment when `DATABASE_URL` is set (the master
 * key is then required), else what the environment gives over the embedded default's secrets file.
 */
export const instanceSecretsOf = (
  config: AppSettings,
  file: Option.Option<LoadedSecretsFile>
): Effect.Effect<InstanceSecretsShape, StartupError> => {
  if (Option.isSome(config.databaseUrl)) {
    return Option.match(config.masterKey, {
      onNone: () =>
        Effect.fail(
          new StartupError({
            message:
              "BOSUN_MASTER_KEY: required when DATABASE_URL is set (base64 of 32 bytes, e.g. `openssl rand -base64 32`)"
          })
        ),
      onSome: (masterKey) =>
        Effect.succeed(
          InstanceSecrets.of({ masterKey, bootstrapToken: config.bootstrapToken, embedded: Option.none() })
        )
    })
  }
  if (Option.isNone(file)) {
    return Effect.fail(new StartupError({ message: "DATABASE_URL is unset but the embedded secrets are missing" }))
  }
  const { file: secretsFile, secrets } = file.value
  return Effect.succeed(
    InstanceSecrets.of({
      masterKey: Option.getOrElse(config.masterKey, () => ({
        key: Redacted.make(secrets.master_key),
        version: secrets.master_key_version,
        previous: new Map()
      })),
      bootstrapToken: Option.orElse(config.bootstrapToken, () => Option.some(Redacted.make(secrets.bootstrap_token))),
      embedded: Option.some({
        postgresPassword: Redacted.make(secrets.postgres_password),
        secretsFile,
        generatedBootstrapToken: Option.isNone(config.bootstrapToken)
      })
    })
  )
}

export class InstanceSecrets extends Context.Service<InstanceSecrets, InstanceSecretsShape>()(
  "bosun/server/config/InstanceSecrets"
) {
  static readonly layer = Layer.effect(
    InstanceSecrets,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const file = Option.isSome(config.databaseUrl)
        ? Option.none<LoadedSecretsFile>()
        : Option.some<LoadedSecretsFile>(yield* loadOrCreateSecretsFile(config.dataDir))
      return yield* instanceSecretsOf(config, file)
    })
  )
}
