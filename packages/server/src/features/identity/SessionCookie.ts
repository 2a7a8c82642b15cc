/**
 * The attributes of the `bosun_session` cookie (docs/interface.md: Design rules): HttpOnly,
 * SameSite=Lax, path `/`, and Secure unless the base URL is plain http on a loopback host (a
 * developer's machine).
 */
const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"])

export const sessionCookieOptions = (baseUrl: URL) => ({
  httpOnly: true,
  sameSite: "lax" as const,
  path: "/",
  secure: !(baseUrl.protocol === "http:" && LOOPBACK.has(baseUrl.hostname))
})
