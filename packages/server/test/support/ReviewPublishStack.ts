/**
 * What a test of the review workflow's publish step runs on: the fake GitHub with an App
 * (a real RSA key) installed on one repository of one organization, the organization's App
 * configuration sealed through the real repository, and the real GitHub clients, outbox, Postgres
 * queues and `bosun-effects` consumer over a fresh test database — no HTTP stack, no cluster —
 * and how a test drives the review workflow's publish step and the delivery it records.
 */
import { generateKeyPairSync } from "node:crypto"
import type { AttemptRun } from "@bosun/actors/attempt/AttemptPorts"
import { MutexLive } from "@bosun/actors/coordination/Mutex"
import { eventually, FakeGithub } from "@bosun/testing"
import { Duration, Effect, Layer, Redacted } from "effect"
import { TestRunner } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { EffectsWorkerLive } from "../../src/app/OutboxWorkers.ts"
import { OrganizationsRepo } from "../../src/features/identity/OrganizationsRepo.ts"
import { REVIEW, reviewWorkflow } from "../../src/features/reviews/ReviewWorkflow.ts"
import { GitHubApp } from "../../src/outbound/github/GitHubApp.ts"
import { GitHubBranches } from "../../src/outbound/github/GitHubBranches.ts"
import { GitHubPulls } from "../../src/outbound/github/GitHubPulls.ts"
import { GithubAppsRepo } from "../../src/outbound/github/GithubAppsRepo.ts"
import { LinearTokens } from "../../src/outbound/linear/LinearTokens.ts"
import { LinearTracker } from "../../src/outbound/linear/LinearTracker.ts"
import { SlackChat } from "../../src/outbound/slack/SlackChat.ts"
import { AppConfig } from "../../src/platform/config/AppConfig.ts"
import { layerMemory } from "../../src/platform/storage/CacheMemory.ts"
import { Outbox } from "../../src/platform/storage/Outbox.ts"
import { layerPostgres } from "../../src/platform/storage/QueuePostgres.ts"
import { testSettings } from "./TestServer.ts"
import { layerTestServices } from "./TestServices.ts"

const APP_ID = 6161
const INSTALLATION_ID = 777

const OUTBOX = { relayInterval: Duration.millis(200), grace: Duration.seconds(1), resendAfter: Duration.minutes(15) }
const QUEUES = {
  visibilityTimeout: Duration.seconds(5),
  retryDelay: Duration.millis(100),
  pollInterval: Duration.millis(50)
}

/** The stack for organization `org` with the App installed on `repository` (`owner/name`), slug `bosun`. */
export const layerReviewPublishStack = (org: string, repository: string) => {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
  const owner = repository.split("/")[0] ?? ""
  const fixture = Layer.effectDiscard(
    Effect.gen(function* () {
      const fake = yield* FakeGithub
      fake.addApp({
        clientId: `Iv1.${org}`,
        clientSecret: `${org}-secret`,
        appId: APP_ID,
        publicKey: publicKey.export({ type: "spki", format: "pem" }).toString(),
        slug: "bosun"
      })
      fake.addInstallation({
        id: INSTALLATION_ID,
        appId: APP_ID,
        account: { id: 7100, login: owner, type: "Organization" },
        repositories: [repository]
      })
      yield* (yield* OrganizationsRepo).ensure(org)
      yield* (yield* GithubAppsRepo).upsert(org, {
        githubAppId: APP_ID,
        slug: "bosun",
        clientId: `Iv1.${org}`,
        clientSecret: Redacted.make(`${org}-secret`),
        privateKey: Redacted.make(privateKey.export({ type: "pkcs8", format: "pem" }).toString()),
        webhookSecret: Redacted.make(`${org}-webhook-secret`)
      })
    })
  )
  return fixture.pipe(
    Layer.provideMerge(
      Layer.unwrap(
        Effect.map(FakeGithub, (fake) => {
          const settings = testSettings({ githubApiUrl: new URL(fake.apiUrl) })
          // A rate limit of more than half a second is not waited out inside a call: tests of the
          // delivery's own wait need not wait a minute.
          const config = Layer.succeed(
            AppConfig,
            AppConfig.of({ ...settings, github: { ...settings.github, maxRateLimitWait: Duration.millis(500) } })
          )
          return EffectsWorkerLive.pipe(
            Layer.provideMerge(Outbox.layer(OUTBOX)),
            Layer.provideMerge(SlackChat.layer),
            // Linear's client takes the cluster-wide token lock: an in-memory runner offers it.
            Layer.provideMerge(
              LinearTracker.layer.pipe(
                Layer.provide(LinearTokens.layer),
                Layer.provide(MutexLive),
                Layer.provide(TestRunner.layer)
              )
            ),
            Layer.provideMerge(layerPostgres(QUEUES)),
            Layer.provideMerge(Layer.merge(GitHubPulls.layer, GitHubBranches.layer)),
            Layer.provideMerge(GitHubApp.layer),
            Layer.provideMerge(layerMemory),
            Layer.provideMerge(config),
            Layer.provideMerge(layerTestServices)
          )
        })
      )
    ),
    Layer.provideMerge(FakeGithub.layer)
  )
}

/** The review workflow's publish step for `attemptRun`, the agent having written `output`. */
export const publishReview = (attemptRun: AttemptRun, output: unknown) =>
  Effect.gen(function* () {
    const type = (yield* reviewWorkflow)[REVIEW]
    if (type === undefined) return yield* Effect.die(new Error("no review type"))
    const text = typeof output === "string" ? output : JSON.stringify(output)
    return yield* type.publish({
      run: attemptRun,
      result: {
        run_id: attemptRun.runId,
        attempt_id: attemptRun.attemptId,
        agent: "CUSTOM",
        status: "SUCCEEDED",
        phase: "DONE",
        retryable: false,
        exit_code: 0,
        error: null,
        usage: { input_tokens: 0, output_tokens: 0, cost_usd: null, duration_ms: 1 },
        files: [],
        last_seq: 1,
        started_at: new Date().toISOString(),
        finished_at: new Date().toISOString()
      },
      file: () => Effect.succeed(new TextEncoder().encode(text))
    })
  })

/** The run's review delivery as the outbox holds it: done, dead-lettered, or none recorded. */
export const deliveryState = (runId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ done: boolean; dead: boolean }>`SELECT done_at IS NOT NULL AS done, dead_lettered_at IS NOT NULL AS dead
        FROM outbox WHERE kind = 'github.review_delivery' AND payload->>'run_id' = ${runId}`,
      (rows) => rows[0]
    )
  )

/** How many of the run's check-run states are still to be posted. */
const pendingChecks = (runId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox
        WHERE kind = 'github.check_run' AND payload->>'external_id' = ${`bosun-review:${runId}`}
          AND done_at IS NULL AND dead_lettered_at IS NULL`,
      (rows) => rows[0]?.n ?? 0
    )
  )

/**
 * Waits until the review delivery of `runId` (if publish recorded one) is done or dead-lettered,
 * and the check-run states it recorded are posted.
 */
export const delivered = (runId: string) =>
  Effect.andThen(
    eventually(deliveryState(runId), (state) => state === undefined || state.done || state.dead, Duration.seconds(30)),
    eventually(pendingChecks(runId), (pending) => pending === 0, Duration.seconds(30))
  )

/** Publish, then the delivery it recorded, as the server runs them. */
export const publishAndDeliver = (attemptRun: AttemptRun, output: unknown) =>
  Effect.tap(publishReview(attemptRun, output), () => delivered(attemptRun.runId))

/**
 * Delivers the run's review again, as after a wake-up lost in a crash: the outbox row is undone and
 * unsent, so the relay sends it once more; waits until it is done.
 */
export const redeliver = (runId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE outbox SET done_at = NULL, enqueued_at = NULL
               WHERE kind = 'github.review_delivery' AND payload->>'run_id' = ${runId}`
    yield* eventually(deliveryState(runId), (state) => state?.done === true, Duration.seconds(30))
  })
