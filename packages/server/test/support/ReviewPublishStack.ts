/**
 * What a test of the review workflow's publish step runs on (issue 8): the fake GitHub with an App
 * (a real RSA key) installed on one repository of one organization, the organization's App
 * configuration sealed through the real repository, and the real GitHub clients, outbox, Postgres
 * queues and `bosun-effects` consumer over a fresh test database — no HTTP stack, no cluster.
 */
import { generateKeyPairSync } from "node:crypto"
import { MutexLive } from "@bosun/actors/coordination/Mutex"
import { FakeGithub } from "@bosun/testing"
import { Duration, Effect, Layer, Redacted } from "effect"
import { TestRunner } from "effect/cluster"
import { AppConfig } from "../../src/config/AppConfig.ts"
import { EffectsConsumerLive } from "../../src/effects/EffectsConsumer.ts"
import { GithubAppsRepo } from "../../src/persistence/GithubAppsRepo.ts"
import { OrganizationsRepo } from "../../src/persistence/OrganizationsRepo.ts"
import { GitHubApp } from "../../src/providers/GitHubApp.ts"
import { GitHubBranches } from "../../src/providers/GitHubBranches.ts"
import { GitHubPulls } from "../../src/providers/GitHubPulls.ts"
import { LinearTokens } from "../../src/providers/LinearTokens.ts"
import { LinearTracker } from "../../src/providers/LinearTracker.ts"
import { SlackChat } from "../../src/providers/SlackChat.ts"
import { layerMemory } from "../../src/storage/CacheMemory.ts"
import { Outbox } from "../../src/storage/Outbox.ts"
import { layerPostgres } from "../../src/storage/QueuePostgres.ts"
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
          const config = Layer.succeed(AppConfig, AppConfig.of(testSettings({ githubApiUrl: new URL(fake.apiUrl) })))
          return EffectsConsumerLive.pipe(
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
