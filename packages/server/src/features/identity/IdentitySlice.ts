/**
 * The identity slice as layers: its services (organizations, users, sessions with the configured
 * lifetimes, organization access), its HTTP groups (sign-in, identity) and the middleware that
 * authenticates requests (a session cookie, or the bootstrap token where the contract allows it).
 */
import { Effect, Layer } from "effect"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { AuthHttp } from "./AuthHttp.ts"
import { BootstrapAuthLive } from "./BootstrapAuth.ts"
import { IdentityHttp } from "./IdentityHttp.ts"
import { OrgAccess } from "./OrgAccess.ts"
import { OrganizationsRepo } from "./OrganizationsRepo.ts"
import { SessionAuthLive } from "./SessionAuth.ts"
import { SessionsRepo } from "./SessionsRepo.ts"
import { UsersRepo } from "./UsersRepo.ts"

/** Sessions with the configured idle timeout and maximum age. */
const SessionsLive = Layer.unwrap(Effect.map(AppConfig, (config) => SessionsRepo.layer(config.sessions)))

export const IdentityLive = OrgAccess.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(OrganizationsRepo.layer, UsersRepo.layer, SessionsLive))
)

export const IdentityHttpLive = Layer.mergeAll(IdentityHttp, AuthHttp)

export const AuthMiddlewareLive = Layer.merge(BootstrapAuthLive, SessionAuthLive)
