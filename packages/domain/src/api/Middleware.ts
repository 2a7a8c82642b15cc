/**
 * Middleware definitions shared by the contract (implementations live in the server).
 *
 * `RequestValidation` turns Schema decoding failures of path parameters, query, headers and
 * body into the 400 envelope (docs/interface.md: Errors; without it Effect answers 400 with an empty body).
 */
import { HttpApiMiddleware } from "effect/http-api"
import { BadRequest } from "../ApiError.ts"

export class RequestValidation extends HttpApiMiddleware.Service<RequestValidation>()(
  "bosun/domain/api/RequestValidation",
  { error: BadRequest }
) {}
