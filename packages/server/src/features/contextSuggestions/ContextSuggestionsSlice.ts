/** The context-suggestions slice as layers: the suggestions and its HTTP group. */
import { ContextSuggestionsHttp } from "./ContextSuggestionsHttp.ts"
import { ContextSuggestionsRepo } from "./ContextSuggestionsRepo.ts"

export const ContextSuggestionsLive = ContextSuggestionsRepo.layer

export const ContextSuggestionsHttpLive = ContextSuggestionsHttp
