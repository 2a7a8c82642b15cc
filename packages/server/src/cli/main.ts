#!/usr/bin/env node
import { layerJsonLogger } from "@bosun/platform/JsonLogger"
/**
 * The `bosun` operator command (`npm run bosun -- <command>`, or the `bosun` bin of the server
 * package). It reads the same configuration as the server and uses the same services on the
 * same database: on the embedded default it connects to the Postgres of a running server, or
 * starts it when none runs. Log records go to stderr as JSON (warnings and errors only), so
 * stdout carries only what a command prints.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Cause, Context, Effect, Exit, Layer, References } from "effect"
import { CliError, Command } from "effect/cli"
import { appServices } from "../app/Server.ts"
import { GitHubAccounts } from "../outbound/github/GitHubAccounts.ts"
import { SlackChat } from "../outbound/slack/SlackChat.ts"
import { AppConfig } from "../platform/config/AppConfig.ts"
import { InstanceSecrets } from "../platform/config/InstanceSecrets.ts"
import { describeStartupFailure } from "../platform/config/StartupFailure.ts"
import { DatabaseCliLive } from "../platform/db/Database.ts"
import { Migrator } from "../platform/db/Migrator.ts"
import { CacheAndQueuesLive } from "../platform/storage/StorageLive.ts"
import { BOSUN_VERSION } from "../platform/Version.ts"
import { CliFailure } from "./CliFailure.ts"
import { discover } from "./commands/agentConnection.ts"
import { get as getConfig, reset as resetConfig, set as setConfig } from "./commands/config.ts"
import { connectLinear, connectSlack } from "./commands/connections.ts"
import { doctor } from "./commands/doctor.ts"
import { keys } from "./commands/keys.ts"
import { link } from "./commands/organizations.ts"
import { list as listDeadLetters, replay as replayDeadLetters } from "./commands/queues.ts"
import { rotate, status } from "./commands/secrets.ts"
import { create as createSession } from "./commands/sessions.ts"
import { grant, revoke } from "./commands/users.ts"

/**
 * What the database commands use: the server's services, migrations applied first. `rotate`
 * works on the run it follows; `status` only reads (it must not take over someone's run).
 */
const services = (rotationWorker: boolean) =>
  appServices({ rotationWorker }).pipe(
    Layer.provideMerge(Migrator.layer),
    Layer.tap((context) => Context.get(context, Migrator).awaitReady),
    Layer.provideMerge(DatabaseCliLive),
    Layer.provideMerge(InstanceSecrets.layer),
    Layer.provideMerge(AppConfig.layer)
  )

const secrets = Command.make("secrets").pipe(
  Command.withDescription("Sealed secrets and master-key rotation"),
  Command.withSubcommands([rotate.pipe(Command.provide(services(true))), status.pipe(Command.provide(services(false)))])
)

const sessions = Command.make("sessions").pipe(
  Command.withDescription("Sessions"),
  Command.withSubcommands([createSession.pipe(Command.provide(services(false)))])
)

const users = Command.make("users").pipe(
  Command.withDescription("Users and instance roles"),
  Command.withSubcommands([grant.pipe(Command.provide(services(false))), revoke.pipe(Command.provide(services(false)))])
)

const organizations = Command.make("organizations").pipe(
  Command.withDescription("Organizations"),
  Command.withSubcommands([link.pipe(Command.provide(GitHubAccounts.layer.pipe(Layer.provideMerge(services(false)))))])
)

const agentConnection = Command.make("agent-connection").pipe(
  Command.withDescription("Agent connections"),
  Command.withSubcommands([discover.pipe(Command.provide(services(false)))])
)

const config = Command.make("config").pipe(
  Command.withDescription("Organization and repository configuration"),
  Command.withSubcommands([getConfig, setConfig, resetConfig]),
  Command.provide(services(false))
)

/** The queues on the configured backend (Redis Streams, or Postgres on the embedded default). */
const queueServices = CacheAndQueuesLive.pipe(
  Layer.provideMerge(Migrator.layer),
  Layer.tap((context) => Context.get(context, Migrator).awaitReady),
  Layer.provideMerge(DatabaseCliLive),
  Layer.provideMerge(InstanceSecrets.layer),
  Layer.provideMerge(AppConfig.layer)
)

const queues = Command.make("queues").pipe(
  Command.withDescription("Queues and their dead letters"),
  Command.withSubcommands([
    Command.make("dead-letters").pipe(
      Command.withDescription("Dead-letter queues: messages that failed five deliveries"),
      Command.withSubcommands([listDeadLetters, replayDeadLetters]),
      Command.provide(queueServices)
    )
  ])
)

const slack = Command.make("slack").pipe(
  Command.withDescription("The Slack connection"),
  Command.withSubcommands([
    connectSlack.pipe(Command.provide(SlackChat.layer.pipe(Layer.provideMerge(services(false)))))
  ])
)

const linear = Command.make("linear").pipe(
  Command.withDescription("The Linear connection"),
  Command.withSubcommands([connectLinear.pipe(Command.provide(services(false)))])
)

const bosun = Command.make("bosun").pipe(
  Command.withDescription("Bosun operator commands"),
  Command.withSubcommands([
    keys,
    secrets,
    sessions,
    users,
    organizations,
    agentConnection,
    config,
    queues,
    slack,
    linear,
    doctor
  ])
)

/** The line a failure prints: none for parse errors and help, which the CLI has already shown. */
const failureMessage = (cause: Cause.Cause<unknown>): string | undefined => {
  const failure = cause.reasons.find(Cause.isFailReason)?.error
  if (failure instanceof CliFailure) return failure.message
  if (CliError.isCliError(failure)) return undefined
  return describeStartupFailure(cause)
}

Command.run(bosun, { version: BOSUN_VERSION }).pipe(
  Effect.catchCause((cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.void
      : Effect.sync(() => {
          const failure = cause.reasons.find(Cause.isFailReason)?.error
          const message = failureMessage(cause)
          if (message !== undefined) process.stderr.write(`bosun: ${message}\n`)
          // `--help` is a ShowHelp without errors: a success.
          process.exitCode = failure instanceof CliError.ShowHelp && failure.errors.length === 0 ? 0 : 1
        })
  ),
  Effect.provide(NodeServices.layer),
  Effect.provide(layerJsonLogger((line) => process.stderr.write(`${line}\n`))),
  Effect.provideService(References.MinimumLogLevel, "Warn"),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // Interrupted (Ctrl-C, SIGTERM) is not done: 130, so `rotate && next-step` stops there.
    teardown: (exit, onExit) =>
      onExit(Exit.isSuccess(exit) ? Number(process.exitCode ?? 0) : Cause.hasInterruptsOnly(exit.cause) ? 130 : 1)
  })
)
