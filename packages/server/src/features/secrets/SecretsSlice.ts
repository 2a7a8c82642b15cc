/**
 * The secrets slice as layers: the organization's sealed secrets, the key-rotation service with
 * (or, for read-only CLI commands, without) its worker, which starts once the migrations are
 * applied, and its HTTP group.
 */
import { Effect, Layer } from "effect"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { Migrator } from "../../platform/db/Migrator.ts"
import { OrganizationSecretsRepo } from "./OrganizationSecretsRepo.ts"
import { SecretRotation } from "./SecretRotation.ts"
import { SecretRotationRepo } from "./SecretRotationRepo.ts"
import { SecretRotationsHttp } from "./SecretRotationsHttp.ts"

export const secretsLive = (options: { readonly rotationWorker: boolean }) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const config = yield* AppConfig
      const migrator = yield* Migrator
      return SecretRotation.layer({
        ...config.secretRotation,
        ready: migrator.awaitReady,
        worker: options.rotationWorker
      })
    })
  ).pipe(Layer.provideMerge(Layer.mergeAll(OrganizationSecretsRepo.layer, SecretRotationRepo.layer)))

export const SecretsHttpLive = SecretRotationsHttp
