/**
 * The operator bearer token in front of the bootstrap endpoints
 * (docs/interface.md: Authentication 2). The token is compared as a SHA-256 digest with
 * `timingSafeEqual`, so neither its contents nor its length leak through timing. With no token
 * configured nobody can pass: 503, saying why.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { BootstrapAuth, ErrorCodes, ServiceUnavailable, Unauthorized } from "@bosun/domain"
import { Effect, Layer, Option, Redacted } from "effect"
import { InstanceSecrets } from "../../platform/config/InstanceSecrets.ts"

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

const unset = ServiceUnavailable.fromCode(
  ErrorCodes.bootstrapTokenUnset,
  "No bootstrap token is configured (BOSUN_BOOTSTRAP_TOKEN): the operator endpoints are disabled"
)
const rejected = Unauthorized.fromCode(
  ErrorCodes.unauthorized,
  "A valid bootstrap token is required: Authorization: Bearer <BOSUN_BOOTSTRAP_TOKEN>"
)

export const BootstrapAuthLive = Layer.effect(
  BootstrapAuth,
  Effect.gen(function* () {
    const secrets = yield* InstanceSecrets
    // An empty BOSUN_BOOTSTRAP_TOKEN is no token: nobody could ever present it.
    const expected = Option.map(
      Option.filter(secrets.bootstrapToken, (token) => Redacted.value(token) !== ""),
      (token) => digest(Redacted.value(token))
    )
    return BootstrapAuth.of({
      bearer: (httpEffect, { credential }) => {
        if (Option.isNone(expected)) return Effect.fail(unset)
        const given = Redacted.value(credential)
        return given !== "" && timingSafeEqual(digest(given), expected.value) ? httpEffect : Effect.fail(rejected)
      }
    })
  })
)
