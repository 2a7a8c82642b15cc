/**
 * The whole HTTP contract of Bosun: every group the server serves and the dashboard calls.
 */
import { HttpApi } from "effect/http-api"
import { HealthApi } from "./HealthApi.ts"
import { InstanceApi } from "./InstanceApi.ts"
import { RequestValidation } from "./Middleware.ts"

export class BosunApi extends HttpApi.make("bosun").add(HealthApi).add(InstanceApi).middleware(RequestValidation) {}
