/**
 * The connected-apps slice as one layer: the HTTP groups that connect an organization's GitHub
 * App, Slack, Linear and Composio. Their credentials' repositories are the outbound clients'.
 */
import { Layer } from "effect"
import { ComposioHttp } from "./ComposioHttp.ts"
import { GithubAppHttp } from "./GithubAppHttp.ts"
import { LinearHttp } from "./LinearHttp.ts"
import { SlackHttp } from "./SlackHttp.ts"

export const ConnectedAppsHttpLive = Layer.mergeAll(GithubAppHttp, SlackHttp, LinearHttp, ComposioHttp)
