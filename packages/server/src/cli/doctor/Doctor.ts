/**
 * `bosun doctor`: every check in the order an operator fixes things — configuration, database
 * and migrations, Redis, S3, GitHub Apps, the agent runtime, a model turn per organization, the
 * key ring — each bounded in time,
 * none changing anything. A check whose prerequisite failed is skipped and says why. The
 * independent probes run side by side, so a deployment where everything is down still answers
 * within seconds. Printing is the command's job (`cli/commands/doctor.ts`).
 */
import { RunQueue } from "@bosun/actors/jobs/RunQueue"
import { RuntimeClient } from "@bosun/actors/runtime/RuntimeClient"
import { Duration, Effect, Layer, Option } from "effect"
import { AgentConnectionsRepo } from "../../features/agentConnections/AgentConnectionsRepo.ts"
import { ConfigurationRepo } from "../../features/agentConnections/ConfigurationRepo.ts"
import { SecretRotationRepo } from "../../features/secrets/SecretRotationRepo.ts"
import { GitHubApp } from "../../outbound/github/GitHubApp.ts"
import { GithubAppsRepo } from "../../outbound/github/GithubAppsRepo.ts"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { makeKeyRing, Secrets } from "../../platform/crypto/Secrets.ts"
import { layerMemory } from "../../platform/storage/CacheMemory.ts"
import { CheckFailed, type CheckResult, describeCause, failed, ok, runCheck, skipped } from "./CheckResult.ts"
import { checkConfiguration, type DoctorSetup, secretValues } from "./ConfigurationCheck.ts"
import { checkMigrations, DATABASE, MIGRATIONS, openDatabase } from "./DatabaseCheck.ts"
import { checkGithubApps, GITHUB_APPS } from "./GithubAppCheck.ts"
import { checkKeyRing, KEY_RING } from "./KeyRingCheck.ts"
import { checkModelTurns, MODEL_TURN } from "./ModelTurnCheck.ts"
import { checkRedis, REDIS } from "./RedisCheck.ts"
import { checkRuntime, RUNTIME } from "./RuntimeCheck.ts"
import { checkS3, S3 } from "./S3Check.ts"

/** Reading the migrations table. */
const QUERY_TIMEOUT = Duration.seconds(5)
/** Opening every envelope reads every sealed column: more than a probe, still bounded. */
const KEY_RING_TIMEOUT = Duration.seconds(30)

export interface DoctorReport {
  readonly results: ReadonlyArray<CheckResult>
  /** Secret values of the configuration: no printed line may contain one. */
  readonly secrets: ReadonlyArray<string>
}

/** The checks that run on the database: migrations, GitHub Apps (their credentials are sealed there), the key ring. */
const databaseChecks = Effect.fn("Doctor.databaseChecks")(function* (setup: DoctorSetup) {
  const opened = yield* Effect.result(openDatabase(setup))
  if (opened._tag === "Failure") {
    const why = "no database to read (see the Database line)"
    return {
      database: failed(DATABASE, opened.failure),
      migrations: skipped(MIGRATIONS, why),
      githubApps: [skipped(GITHUB_APPS, why)],
      modelTurns: [skipped(MODEL_TURN, why)],
      keyRing: skipped(KEY_RING, why)
    }
  }
  const { context, description, masterKey } = opened.success
  const services = Layer.mergeAll(
    GitHubApp.layer,
    SecretRotationRepo.layer,
    ConfigurationRepo.layer,
    AgentConnectionsRepo.layer
  ).pipe(
    Layer.provideMerge(GithubAppsRepo.layer),
    Layer.provide(
      Layer.mergeAll(
        RunQueue.layer,
        Layer.succeed(AppConfig, AppConfig.of(setup.settings)),
        Layer.succeed(Secrets, Secrets.make(makeKeyRing(masterKey))),
        layerMemory
      )
    ),
    Layer.provideMerge(Layer.succeedContext(context))
  )
  const [migrations, githubApps, keyRing, modelTurns] = yield* Effect.all(
    [
      runCheck(MIGRATIONS, checkMigrations(setup.settings.migrationsDir), {
        timeout: QUERY_TIMEOUT,
        onTimeout: "the database answers too slowly: check its load and locks (pg_stat_activity)"
      }),
      checkGithubApps(setup.settings.githubApiUrl).pipe(
        Effect.catchDefect((defect) =>
          Effect.succeed([
            failed(
              GITHUB_APPS,
              new CheckFailed({
                message: `cannot list the registered Apps: ${describeCause(defect)}`,
                fix: "give the database user of DATABASE_URL read access to github_apps"
              })
            )
          ])
        )
      ),
      runCheck(KEY_RING, checkKeyRing(masterKey), {
        timeout: KEY_RING_TIMEOUT,
        onTimeout:
          "run `bosun secrets rotate --dry-run` instead: it checks every envelope in resumable batches and reports the same"
      }),
      checkModelTurns(setup.settings)
    ],
    { concurrency: "unbounded" }
  ).pipe(Effect.provide(services))
  return { database: ok(DATABASE, description), migrations, githubApps, modelTurns, keyRing }
}, Effect.scoped)

export const runDoctor = Effect.fn("Doctor.run")(function* () {
  const configuration = yield* checkConfiguration
  if (Option.isNone(configuration.setup)) {
    const why = "the configuration is invalid (see the Configuration line)"
    return {
      results: [
        configuration.result,
        ...[DATABASE, MIGRATIONS, REDIS, S3, GITHUB_APPS, RUNTIME, MODEL_TURN, KEY_RING].map((name) =>
          skipped(name, why)
        )
      ],
      secrets: []
    } satisfies DoctorReport
  }
  const setup = configuration.setup.value
  const [database, redis, s3, runtime] = yield* Effect.all(
    [
      databaseChecks(setup),
      checkRedis(setup.settings),
      checkS3(setup.settings),
      checkRuntime(setup.settings).pipe(Effect.provide(RuntimeClient.layer))
    ],
    { concurrency: "unbounded" }
  )
  return {
    results: [
      configuration.result,
      database.database,
      database.migrations,
      redis,
      s3,
      ...database.githubApps,
      runtime,
      ...database.modelTurns,
      database.keyRing
    ],
    secrets: secretValues(setup)
  } satisfies DoctorReport
})
