/**
 * `bosun slack connect` and `bosun linear connect`: the operator's way to do what
 * `PUT .../slack-connection` and `PUT .../linear-connection` do, for automation and for a first run
 * before anyone signs in. Secrets are read from files (never from the command line, where `ps` and
 * shell history would show them), sealed on arrival and never printed; each connection is audited
 * as the operator's.
 */
import { PathId } from "@bosun/domain"
import { Console, Effect, Option, Redacted } from "effect"
import { Command, Flag } from "effect/cli"
import { OrganizationsRepo } from "../../features/identity/OrganizationsRepo.ts"
import { LinearConnectionsRepo, type LinearOAuthInput } from "../../outbound/linear/LinearConnectionsRepo.ts"
import { SlackChat } from "../../outbound/slack/SlackChat.ts"
import { SlackConnectionsRepo } from "../../outbound/slack/SlackConnectionsRepo.ts"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { CliFailure } from "../CliFailure.ts"

const org = Flag.String("org").pipe(Flag.withSchema(PathId), Flag.withDescription("The organization id"))

/** A secret from a file: its content without the trailing newline; empty is refused. */
const secretFile = (name: string, description: string) =>
  Flag.FileText(name).pipe(
    Flag.withDescription(description),
    Flag.map((text) => text.replace(/\r?\n$/, ""))
  )

const requireSecret = (value: string, flag: string) =>
  value.length === 0 || value.length > 4096
    ? Effect.fail(new CliFailure({ message: `the file of --${flag} must hold 1 to 4096 characters` }))
    : Effect.succeed(Redacted.make(value))

const requireOrganization = (id: string) =>
  Effect.flatMap(OrganizationsRepo, (organizations) => organizations.exists(id)).pipe(
    Effect.flatMap((exists) =>
      exists ? Effect.void : Effect.fail(new CliFailure({ message: `no organization has the id ${id}` }))
    )
  )

export const connectSlack = Command.make(
  "connect",
  {
    org,
    botToken: secretFile("bot-token-file", "A file holding the Slack app's bot token (xoxb-...)"),
    signingSecret: secretFile("signing-secret-file", "A file holding the Slack app's signing secret")
  },
  Effect.fn(function* ({ org, botToken, signingSecret }) {
    yield* requireOrganization(org)
    const token = yield* requireSecret(botToken, "bot-token-file")
    const secret = yield* requireSecret(signingSecret, "signing-secret-file")
    const identity = yield* (yield* SlackChat).identify(token).pipe(
      Effect.mapError(
        (error) =>
          new CliFailure({
            message:
              error.reason === "Refused"
                ? `Slack refused the bot token (${error.message})`
                : `Slack could not verify the bot token: ${error.message}`
          })
      )
    )
    const saved = yield* (yield* SlackConnectionsRepo)
      .upsert(org, {
        teamId: identity.teamId,
        teamName: identity.teamName,
        botUserId: identity.botUserId,
        botToken: token,
        signingSecret: secret
      })
      .pipe(
        Effect.mapError((error) => new CliFailure({ message: `the secrets could not be sealed: ${error.message}` }))
      )
    if (Option.isNone(saved)) {
      return yield* new CliFailure({ message: `Slack team ${identity.teamId} is connected to another organization` })
    }
    yield* (yield* AuditLog).record({
      organizationId: org,
      actor: { kind: "operator" },
      action: "slack_connection.connect",
      target: `slack_team:${identity.teamId}`
    })
    yield* Console.log(
      `${org} is connected to Slack team ${identity.teamId}${identity.teamName === null ? "" : ` (${identity.teamName})`} as bot user ${identity.botUserId}`
    )
  })
).pipe(Command.withDescription("Connect an organization to a Slack workspace (the token is checked with Slack)"))

export const connectLinear = Command.make(
  "connect",
  {
    org,
    workspace: Flag.String("workspace").pipe(
      Flag.withDescription("The Linear workspace id (organizationId of its webhook payloads)")
    ),
    webhookSecret: secretFile("webhook-secret-file", "A file holding the Linear webhook's signing secret"),
    accessToken: secretFile("access-token-file", "A file holding a Linear API key or OAuth access token").pipe(
      Flag.optional
    ),
    appUserId: Flag.String("app-user-id").pipe(Flag.withDescription("Bosun's Linear user id"), Flag.optional),
    appUserName: Flag.String("app-user-name").pipe(
      Flag.withDescription("Bosun's Linear user name, as mentions write it"),
      Flag.optional
    ),
    clientId: Flag.String("oauth-client-id").pipe(
      Flag.withDescription("For an expiring OAuth token: the Linear OAuth application's client id"),
      Flag.optional
    ),
    clientSecret: secretFile("oauth-client-secret-file", "A file holding the OAuth application's client secret").pipe(
      Flag.optional
    ),
    refreshToken: secretFile("refresh-token-file", "A file holding the OAuth grant's refresh token").pipe(
      Flag.optional
    ),
    expiresIn: Flag.Int("expires-in").pipe(
      Flag.withDescription("Seconds the OAuth access token is valid from now (Linear's expires_in)"),
      Flag.optional
    )
  },
  Effect.fn(function* ({
    org,
    workspace,
    webhookSecret,
    accessToken,
    appUserId,
    appUserName,
    clientId,
    clientSecret,
    refreshToken,
    expiresIn
  }) {
    yield* requireOrganization(org)
    if (workspace.length === 0 || workspace.length > 128) {
      return yield* new CliFailure({ message: "--workspace must be 1 to 128 characters" })
    }
    const secret = yield* requireSecret(webhookSecret, "webhook-secret-file")
    const token = Option.isSome(accessToken)
      ? Option.some(yield* requireSecret(accessToken.value, "access-token-file"))
      : Option.none()
    const grantFlags =
      [clientId, clientSecret, refreshToken].filter(Option.isSome).length + (Option.isSome(expiresIn) ? 1 : 0)
    if (grantFlags !== 0 && (grantFlags !== 4 || Option.isNone(token))) {
      return yield* new CliFailure({
        message:
          "an OAuth grant needs --access-token-file, --oauth-client-id, --oauth-client-secret-file, --refresh-token-file and --expires-in together"
      })
    }
    let oauth: Option.Option<LinearOAuthInput> = Option.none()
    if (
      Option.isSome(clientId) &&
      Option.isSome(clientSecret) &&
      Option.isSome(refreshToken) &&
      Option.isSome(expiresIn)
    ) {
      if (clientId.value.length === 0 || clientId.value.length > 256) {
        return yield* new CliFailure({ message: "--oauth-client-id must be 1 to 256 characters" })
      }
      if (expiresIn.value < 1 || expiresIn.value > 315_360_000) {
        return yield* new CliFailure({ message: "--expires-in must be 1 to 315360000 seconds" })
      }
      oauth = Option.some({
        clientId: clientId.value,
        clientSecret: yield* requireSecret(clientSecret.value, "oauth-client-secret-file"),
        refreshToken: yield* requireSecret(refreshToken.value, "refresh-token-file"),
        expiresAt: new Date(Date.now() + expiresIn.value * 1000)
      })
    }
    const saved = yield* (yield* LinearConnectionsRepo)
      .upsert(org, {
        linearOrganizationId: workspace,
        webhookSecret: secret,
        accessToken: token,
        appUserId: Option.getOrNull(appUserId),
        appUserName: Option.getOrNull(appUserName),
        oauth
      })
      .pipe(
        Effect.mapError((error) => new CliFailure({ message: `the secrets could not be sealed: ${error.message}` }))
      )
    if (Option.isNone(saved)) {
      return yield* new CliFailure({ message: `Linear workspace ${workspace} is connected to another organization` })
    }
    yield* (yield* AuditLog).record({
      organizationId: org,
      actor: { kind: "operator" },
      action: "linear_connection.connect",
      target: `linear_workspace:${workspace}`
    })
    const tokenNote = Option.isNone(token)
      ? " (no access token: Bosun cannot reply in Linear)"
      : Option.isSome(oauth)
        ? " with an OAuth grant Bosun renews"
        : " with an access token"
    yield* Console.log(`${org} is connected to Linear workspace ${workspace}${tokenNote}`)
  })
).pipe(Command.withDescription("Connect an organization to a Linear workspace"))
