/**
 * `bosun organizations link --org ORG --github-login LOGIN`: ties a Bosun organization to the
 * GitHub organization (or user) whose installation of the App it mirrors. Sign-ins then give
 * that account's members a membership; a sign-in never ties an organization itself, so nobody
 * can claim one by installing the App on their own account first. Audited.
 */
import { PathId } from "@bosun/domain"
import { Console, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { AuditLog } from "../../persistence/AuditLog.ts"
import { OrganizationsRepo } from "../../persistence/OrganizationsRepo.ts"
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
    if (!(yield* organizations.setGithubLogin(org, githubLogin))) {
      return yield* new CliFailure({ message: `no organization has the id ${org}` })
    }
    yield* audit.record({
      organizationId: org,
      actor: { kind: "operator" },
      action: "organization.link",
      target: `github:${githubLogin}`
    })
    yield* Console.log(`${org} now mirrors the GitHub account ${githubLogin}`)
  })
).pipe(Command.withDescription("Tie an organization to its GitHub account"))
