/**
 * `bosun doctor`, check 1: the configuration loads as the server loads it (`AppConfig`, then the
 * instance secrets), worded as start-up words it (`describeStartupFailure`). Unlike start-up it
 * never creates `secrets.json`: on an embedded default that has never started there is simply no
 * key ring and no database yet. Every other check needs what this one loads.
 */
import { Effect, Option, Redacted } from "effect"
import { type AppSettings, appConfig } from "../../platform/config/AppConfig.ts"
import { type InstanceSecretsShape, instanceSecretsOf, readSecretsFile } from "../../platform/config/InstanceSecrets.ts"
import { describeStartupFailure } from "../../platform/config/StartupFailure.ts"
import { CheckFailed, type CheckResult, displayUrl, failed, isSecretParameter, ok } from "./CheckResult.ts"

export const CONFIGURATION = "Configuration"

export interface DoctorSetup {
  readonly settings: AppSettings
  /** The key ring and the embedded password; none on an embedded default that has never started. */
  readonly instance: Option.Option<InstanceSecretsShape>
}

const load = Effect.gen(function* () {
  const settings = yield* appConfig
  const file = Option.isSome(settings.databaseUrl) ? Option.none() : yield* readSecretsFile(settings.dataDir)
  const instance =
    Option.isSome(settings.databaseUrl) || Option.isSome(file)
      ? Option.some(yield* instanceSecretsOf(settings, file))
      : Option.none<InstanceSecretsShape>()
  return { settings, instance } satisfies DoctorSetup
})

const describe = ({ settings, instance }: DoctorSetup) => {
  const database = Option.match(settings.databaseUrl, {
    onSome: (url) => `DATABASE_URL ${displayUrl(Redacted.value(url))}`,
    onNone: () =>
      Option.isSome(instance)
        ? `embedded default, data in ${settings.dataDir}`
        : `embedded default, data in ${settings.dataDir}, which has no secrets.json: this instance has never started`
  })
  const ring = Option.match(instance, {
    onNone: () => "no master key yet",
    onSome: ({ masterKey }) =>
      `master key version ${masterKey.version}${
        masterKey.previous.size === 0 ? "" : `, previous version(s) ${[...masterKey.previous.keys()].join(", ")}`
      }`
  })
  return `every setting is valid (${database}; ${ring})`
}

/** The configuration line, and what the other checks need when it passed. */
export const checkConfiguration: Effect.Effect<{
  readonly result: CheckResult
  readonly setup: Option.Option<DoctorSetup>
}> = Effect.exit(load).pipe(
  Effect.map((exit) =>
    exit._tag === "Success"
      ? { result: ok(CONFIGURATION, describe(exit.value)), setup: Option.some(exit.value) }
      : {
          result: failed(
            CONFIGURATION,
            new CheckFailed({
              message: describeStartupFailure(exit.cause),
              fix: "correct the variable it names (docs/configuration-reference.md lists each one and what it expects)"
            })
          ),
          setup: Option.none()
        }
  ),
  Effect.withSpan("Doctor.configuration")
)

/** Every secret value the configuration holds: no printed line may contain one. */
export const secretValues = ({ settings, instance }: DoctorSetup): ReadonlyArray<string> => {
  const urlPassword = (url: Redacted.Redacted<string>) => {
    const parsed = URL.parse(Redacted.value(url))
    if (parsed === null) return []
    // As written in the URL and as the client sends it; a stray `%` makes the decoded form moot.
    const decoded = Option.liftThrowable(decodeURIComponent)(parsed.password)
    const password = parsed.password === "" ? [] : [parsed.password, ...Option.toArray(decoded)]
    const parameters = [...parsed.searchParams].flatMap(([name, value]) => (isSecretParameter(name) ? [value] : []))
    return [...password, ...parameters]
  }
  const redacted = [
    settings.bootstrapToken,
    settings.composioApiKey,
    Option.flatMap(settings.s3, (s3) => s3.secretAccessKey),
    Option.map(settings.runtime.external, (runtime) => runtime.token),
    Option.map(settings.sandboxes.platformContainer, (pc) => pc.provider.runtimeToken.value),
    Option.map(settings.sandboxes.platformContainer, (pc) => pc.provider.proxySecretKey),
    Option.map(settings.sandboxes.platformContainer, (pc) => pc.proxy.ca.privateKey),
    Option.flatMap(settings.sandboxes.platformContainer, (pc) =>
      pc.provider.kubernetes._tag === "Server" ? Option.some(pc.provider.kubernetes.token) : Option.none()
    ),
    Option.map(settings.sandboxes.hostedSandbox, (hosted) => hosted.apiKey),
    Option.map(settings.sandboxes.hostedSandbox, (hosted) => hosted.runtimeToken)
  ].flatMap((value) => (Option.isSome(value) ? [Redacted.value(value.value)] : []))
  const keys = [settings.masterKey, Option.map(instance, (i) => i.masterKey)].flatMap((ring) =>
    Option.isSome(ring) ? [ring.value.key, ...ring.value.previous.values()].map(Redacted.value) : []
  )
  const instanceSecrets = Option.match(instance, {
    onNone: () => [],
    onSome: (i) => [
      ...Option.toArray(i.bootstrapToken).map(Redacted.value),
      ...Option.toArray(i.embedded).map((e) => Redacted.value(e.postgresPassword))
    ]
  })
  return [
    ...redacted,
    ...keys,
    ...instanceSecrets,
    ...Option.toArray(settings.databaseUrl).flatMap(urlPassword),
    ...Option.toArray(settings.redisUrl).flatMap(urlPassword)
  ].filter((secret) => secret.length >= 4)
}
