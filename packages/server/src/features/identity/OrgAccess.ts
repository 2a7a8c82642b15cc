/**
 * Who may touch an organization (docs/interface.md: Authentication 2-3; Design rules): every handler of
 * `/organizations/{organization_id}/...` asks here after `SessionAuth`. Not a member (or no such
 * organization) is 404, exactly as a missing resource, so organization ids cannot be probed; a
 * role below what the action needs is 403. The organization's id goes on the request's log line.
 */
import { CurrentUser, ErrorCodes, Forbidden, NotFound, type Role, roleAtLeast } from "@bosun/domain"
import { RequestContext } from "@bosun/platform/RequestContext"
import { Context, Effect, Layer, Option } from "effect"
import { UsersRepo } from "./UsersRepo.ts"

export const organizationNotFound = NotFound.fromCode(ErrorCodes.notFound, "No organization has this id")

export class OrgAccess extends Context.Service<
  OrgAccess,
  {
    /** The caller's role in the organization; 404 when they are not a member. */
    readonly member: (organizationId: string) => Effect.Effect<Role, NotFound, CurrentUser>
    /** As `member`, and 403 unless the role is at least `required`. */
    readonly require: (organizationId: string, required: Role) => Effect.Effect<Role, NotFound | Forbidden, CurrentUser>
  }
>()("bosun/server/http/OrgAccess") {
  static readonly layer = Layer.effect(
    OrgAccess,
    Effect.gen(function* () {
      const users = yield* UsersRepo
      const member = Effect.fn("OrgAccess.member")(function* (organizationId: string) {
        const user = yield* CurrentUser
        const role = yield* users.roleIn(organizationId, user.userId)
        if (Option.isNone(role)) return yield* organizationNotFound
        const context = yield* Effect.serviceOption(RequestContext)
        if (Option.isSome(context)) context.value.orgId = organizationId
        return role.value
      })
      const require = Effect.fn("OrgAccess.require")(function* (organizationId: string, required: Role) {
        const role = yield* member(organizationId)
        if (!roleAtLeast(role, required)) {
          return yield* Forbidden.fromCode(ErrorCodes.forbidden, `This action needs the ${required} role`)
        }
        return role
      })
      return OrgAccess.of({ member, require })
    })
  )
}
