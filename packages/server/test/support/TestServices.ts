/**
 * The server's services (repositories, sealing, no rotation worker) over a fresh migrated test
 * database and a fresh master key: for tests of a repository without the HTTP stack or a cluster.
 */
import { randomBytes } from "node:crypto"
import { LogCapture, TestDatabase } from "@bosun/testing"
import { Context, Layer, Redacted } from "effect"
import { appServices } from "../../src/app/Server.ts"
import { AppConfig } from "../../src/platform/config/AppConfig.ts"
import { Migrator } from "../../src/platform/db/Migrator.ts"
import { layerTestSecrets, testSettings } from "./TestServer.ts"

/** The services with the master key `masterKey` (base64 of 32 bytes), e.g. one a server process shares. */
export const makeTestServices = (masterKey: string = randomBytes(32).toString("base64")) =>
  appServices({ rotationWorker: false }).pipe(
    Layer.provideMerge(Migrator.layer),
    Layer.tap((context) => Context.get(context, Migrator).awaitReady),
    Layer.provideMerge(
      layerTestSecrets({
        masterKey: { key: Redacted.make(masterKey), version: 1, previous: new Map() }
      })
    ),
    Layer.provide(Layer.succeed(AppConfig, AppConfig.of(testSettings()))),
    Layer.provideMerge(Layer.mergeAll(TestDatabase.layer, LogCapture.layer))
  )

export const layerTestServices = makeTestServices()
