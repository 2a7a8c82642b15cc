/**
 * The outbound side as layers: the repositories of each provider's connection (sealed
 * credentials) and of provider effects, the provider clients, and the handlers of provider calls
 * on `bosun-effects`. Which calls to make is the features' to decide.
 */
import { Layer } from "effect"
import { Composio } from "./composio/Composio.ts"
import { ComposioConnectionsRepo } from "./composio/ComposioConnectionsRepo.ts"
import { ProviderEffectsRepo } from "./effects/ProviderEffectsRepo.ts"
import { GitHubApp } from "./github/GitHubApp.ts"
import { GitHubBranches } from "./github/GitHubBranches.ts"
import { GitHubOAuth } from "./github/GitHubOAuth.ts"
import { GitHubPulls } from "./github/GitHubPulls.ts"
import { GithubAppsRepo } from "./github/GithubAppsRepo.ts"
import { GithubEffectHandlersLive } from "./github/GithubEffects.ts"
import { LinearConnectionsRepo } from "./linear/LinearConnectionsRepo.ts"
import { LinearEffectHandlersLive } from "./linear/LinearEffects.ts"
import { LinearTokens } from "./linear/LinearTokens.ts"
import { LinearTracker } from "./linear/LinearTracker.ts"
import { SlackChat } from "./slack/SlackChat.ts"
import { SlackConnectionsRepo } from "./slack/SlackConnectionsRepo.ts"
import { SlackEffectHandlersLive } from "./slack/SlackEffects.ts"

/** Connections and effects as stored; needs the SqlClient and the sealing service. */
export const ConnectionsLive = Layer.mergeAll(
  GithubAppsRepo.layer,
  LinearConnectionsRepo.layer,
  SlackConnectionsRepo.layer,
  ComposioConnectionsRepo.layer,
  ProviderEffectsRepo.layer,
  GitHubOAuth.layer,
  Composio.layer
)

/** The clients that act as the organization's GitHub App, and Slack's; they need the cache besides. */
export const ProviderClientsLive = Layer.mergeAll(
  Layer.merge(GitHubPulls.layer, GitHubBranches.layer).pipe(Layer.provideMerge(GitHubApp.layer)),
  SlackChat.layer
)

/**
 * The clients whose calls take a cluster-wide lock, built on the runner: Linear's, whose token
 * refresh holds the Mutex `tracker-token:{org}`.
 */
export const ClusterProviderClientsLive = LinearTracker.layer.pipe(Layer.provideMerge(LinearTokens.layer))

/** GitHub's, Slack's and Linear's handlers of provider calls, added to the `bosun-effects` registry. */
export const OutboundEffectHandlersLive = Layer.mergeAll(
  GithubEffectHandlersLive,
  SlackEffectHandlersLive,
  LinearEffectHandlersLive
)
