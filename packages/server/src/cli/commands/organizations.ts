/**
 * `bosun organizations link --org ORG --github-login LOGIN`: ties a Bosun organization to the
 * GitHub organization (or user) whose installation of the App it mirrors, with the account's id
 * when GitHub answers. Only an installation on that account may then link the organization, and
 * sign-ins give that account's members a membership, so nobody can claim an organization by
 * installing the App on their own account first. Audited.
 */
import { PathId } from "@bosun/domain"
import { Console, Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { OrganizationsRepo } from "../../features/identity/OrganizationsRepo.ts"
import { GitHubAccounts } from "../../outbound/github/GitHubAccounts.ts"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { CliFailure } from "../CliFailure.ts"
import { GithubLogin } from "./users.ts"

export const link = Command.make(
  "link",
  {
    org: Flag.String("org").pipe(Flag.withSchema(PathId), Flag.withDescription("The organization id")),
    githubLogin: Flag.String("github-login").pipe(
      Flag.withSchema(GithubLogin),
      Flag.withDescription("The GitHub organization (or user) login it mirrors")
    )
  },
  Effect.fn(function* ({ org, githubLogin }) {
    const organizations = yield* OrganizationsRepo
    const audit = yield* AuditLog
    if (!(yield* organizations.exists(org))) {
      return yield* new CliFailure({ message: `no organization has the id ${org}` })
    }
    // GitHub unreachable is no reason to refuse: the id is then recorded by the first
    // installation or sign-in of an account with exactly this login.
    const resolved = yield* (yield* GitHubAccounts).byLogin(githubLogin).pipe(Effect.result)
    if (resolved._tag === "Success" && Option.isNone(resolved.success)) {
      return yield* new CliFailure({ message: `GitHub has no account with the login ${githubLogin}` })
    }
    const account =
      resolved._tag === "Success" && Option.isSome(resolved.success)
        ? resolved.success.value
        : { login: githubLogin, id: null }
    const outcome = yield* organizations.setGithubAccount(org, { login: account.login, id: account.id })
    if (outcome === "taken") {
      return yield* new CliFailure({
        message: `another organization already mirrors the GitHub account ${account.login} (id ${account.id})`
      })
    }
    if (outcome === "missing") return yield* new CliFailure({ message: `no organization has the id ${org}` })
    yield* audit.record({
      organizationId: org,
      actor: { kind: "operator" },
      action: "organization.link",
      target: `github:${account.login}`,
      details: { github_account_id: account.id }
    })
    yield* Console.log(
      account.id === null
        ? `${org} now mirrors the GitHub account ${account.login}; GitHub could not be asked for its id (${resolved._tag === "Failure" ? resolved.failure.message : "no answer"}), so the first installation or sign-in of ${account.login} records it`
        : `${org} now mirrors the GitHub account ${account.login} (id ${account.id})`
    )
  })
).pipe(Command.withDescription("Tie an organization to its GitHub account"))
