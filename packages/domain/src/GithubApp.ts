/**
 * The GitHub App configuration of an organization (docs/interface.md: Bootstrap-token endpoints,
 * Authentication 5). client_secret, private_key and webhook_secret are write-only: they are sealed
 * on arrival and no response ever carries them.
 */
import { Schema } from "effect"

const Required = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max))

/** A PEM block of a private key; the server checks that it really is an RSA key. */
export const PrivateKeyPem = Schema.String.check(
  Schema.isMaxLength(16_384),
  Schema.isPattern(/^\s*-----BEGIN (RSA )?PRIVATE KEY-----[A-Za-z0-9+/=\s]+-----END (RSA )?PRIVATE KEY-----\s*$/, {
    message: "must be a PEM-encoded RSA private key"
  })
)

export const GithubAppConfiguration = Schema.Struct({
  client_id: Required(255),
  client_secret: Required(1024),
  github_app_id: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
  github_app_slug: Schema.String.check(
    Schema.isPattern(/^[a-z0-9](?:[a-z0-9-]{0,98}[a-z0-9])?$/, {
      message: "must be a GitHub App slug: lowercase letters, digits and inner hyphens, at most 100 characters"
    })
  ),
  private_key: PrivateKeyPem,
  webhook_secret: Required(1024)
})
export type GithubAppConfiguration = typeof GithubAppConfiguration.Type

/** What the configuration endpoint returns: nothing secret. */
export const GithubAppConfigurationResult = Schema.Struct({
  client_id: Schema.String,
  id: Schema.Int,
  slug: Schema.String
})
export type GithubAppConfigurationResult = typeof GithubAppConfigurationResult.Type
