/**
 * Sessions behind the `bosun_session` cookie (docs/interface.md: Authentication 1; Design rules). A
 * token is 256 random bits, handed out once and stored only as its SHA-256. A session expires after
 * `idleTimeout` without use (sliding: each use pushes it forward, written at most once a minute)
 * and at `maxAge` after creation whatever happens; logout revokes it.
 */
import { createHash, randomBytes } from "node:crypto"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"

export interface SessionSettings {
  readonly idleTimeout: Duration.Duration
  readonly maxAge: Duration.Duration
}

export interface ActiveSession {
  readonly sessionId: string
  readonly userId: string
  readonly login: string
  readonly superUser: boolean
}

const hashOf = (token: string) => createHash("sha256").update(token, "utf8").digest("hex")

const seconds = (duration: Duration.Duration) => Duration.toMillis(duration) / 1000

export class SessionsRepo extends Context.Service<
  SessionsRepo,
  {
    /** A new session of the user; the token is returned once and never stored. */
    readonly create: (
      userId: string
    ) => Effect.Effect<{ readonly sessionId: string; readonly token: Redacted.Redacted<string> }>
    /** The live session this token names, its expiry pushed forward; none when unknown, expired or revoked. */
    readonly authenticate: (token: Redacted.Redacted<string>) => Effect.Effect<Option.Option<ActiveSession>>
    readonly revoke: (sessionId: string) => Effect.Effect<void>
    readonly settings: SessionSettings
  }
>()("bosun/server/persistence/SessionsRepo") {
  static readonly layer = (settings: SessionSettings) =>
    Layer.effect(
      SessionsRepo,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient

        const create = Effect.fn("SessionsRepo.create")(function* (userId: string) {
          const token = randomBytes(32).toString("base64url")
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO sessions (token_hash, user_id, expires_at, absolute_expires_at)
            VALUES (${hashOf(token)}, ${userId},
                    now() + make_interval(secs => ${Math.min(seconds(settings.idleTimeout), seconds(settings.maxAge))}),
                    now() + make_interval(secs => ${seconds(settings.maxAge)}))
            RETURNING id`.pipe(Effect.orDie)
          return { sessionId: row?.id ?? "", token: Redacted.make(token) }
        })

        const authenticate = Effect.fn("SessionsRepo.authenticate")(function* (token: Redacted.Redacted<string>) {
          const value = Redacted.value(token)
          if (value.length === 0 || value.length > 256) return Option.none<ActiveSession>()
          const [row] = yield* sql<{
            id: string
            user_id: string
            login: string
            super_user: boolean
            stale: boolean
          }>`
            SELECT s.id, s.user_id, u.login, u.instance_role = 'SUPER_USER' AS super_user,
                   s.last_seen_at < now() - interval '1 minute' AS stale
            FROM sessions s JOIN users u ON u.id = s.user_id
            WHERE s.token_hash = ${hashOf(value)} AND s.revoked_at IS NULL
              AND s.expires_at > now() AND s.absolute_expires_at > now()`.pipe(Effect.orDie)
          if (row === undefined) return Option.none<ActiveSession>()
          if (row.stale) {
            yield* sql`
              UPDATE sessions SET last_seen_at = now(),
                expires_at = least(now() + make_interval(secs => ${seconds(settings.idleTimeout)}), absolute_expires_at)
              WHERE id = ${row.id}`.pipe(Effect.orDie)
          }
          return Option.some({
            sessionId: row.id,
            userId: row.user_id,
            login: row.login,
            superUser: row.super_user === true
          })
        })

        const revoke = Effect.fn("SessionsRepo.revoke")(function* (sessionId: string) {
          yield* sql`UPDATE sessions SET revoked_at = now() WHERE id = ${sessionId} AND revoked_at IS NULL`.pipe(
            Effect.orDie
          )
        })

        return SessionsRepo.of({ create, authenticate, revoke, settings })
      })
    )
}
