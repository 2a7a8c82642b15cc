/**
 * A GitHub App's JWT (RS256; `iat` 30 s in the past, `exp` 9 minutes on, `iss` the App id), as
 * GitHub's docs describe it, for test code and benchmarks that call the fake GitHub as the App
 * itself (to mint an installation token without Bosun in between).
 */
import { type KeyObject, sign } from "node:crypto"

export const appJwt = (privateKey: KeyObject, appId: number) => {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
  const issued = Math.floor(Date.now() / 1000) - 30
  const unsigned = `${part({ alg: "RS256", typ: "JWT" })}.${part({ iat: issued, exp: issued + 540, iss: appId })}`
  return `${unsigned}.${sign("RSA-SHA256", Buffer.from(unsigned), privateKey).toString("base64url")}`
}
