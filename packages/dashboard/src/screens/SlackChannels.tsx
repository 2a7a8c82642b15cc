/**
 * Slack channels (docs/interface.md: Organization endpoints `GET .../slack/channels`, `PUT
 * .../slack/channels/{id}/passive-listening`, Resources "Chat channel"): the channels Bosun's bot
 * is in and, per channel, whether it listens passively (reads messages that do not mention it).
 * With Slack not connected there are no channels to show, so the screen says to connect it first
 * instead of showing an empty table.
 */
import type { ChatChannel } from "@bosun/domain"
import { call, isNotFound } from "../api/client.ts"
import { useAction, useLoad } from "../api/useLoad.ts"
import { orgPath } from "../routes.ts"
import { Empty, ErrorNote, Link, Loading, when } from "../ui.tsx"

const ChannelRow = (props: { readonly org: string; readonly channel: ChatChannel; readonly changed: () => void }) => {
  const { channel } = props
  const toggle = useAction()
  return (
    <tr>
      <td>
        {channel.is_private ? "🔒 " : "#"}
        {channel.name} <span className="muted">{channel.id}</span>
      </td>
      <td>{channel.is_private ? "Private" : "Public"}</td>
      <td>
        <label>
          <input
            type="checkbox"
            checked={channel.passive_enabled}
            disabled={toggle.pending}
            aria-busy={toggle.pending}
            onChange={(event) => {
              const enabled = event.target.checked
              void toggle
                .perform(() =>
                  call((client) =>
                    client.chat.setPassiveListening({
                      params: { organization_id: props.org, channel_id: channel.id },
                      payload: { enabled }
                    })
                  )
                )
                .then((ok) => {
                  if (ok) props.changed()
                })
            }}
          />{" "}
          Passive listening <span className="visually-hidden">in {channel.name}</span>
        </label>
        <ErrorNote message={toggle.error} />
      </td>
    </tr>
  )
}

const SlackChannels = (props: { readonly org: string }) => {
  const [connection] = useLoad(
    () =>
      call((client) => client.slack.getConnection({ params: { organization_id: props.org } })).then(
        (answer) => answer.data,
        (error: unknown) => {
          if (isNotFound(error)) return null
          throw error
        }
      ),
    [props.org]
  )
  const [channels, reload] = useLoad(
    () => call((client) => client.chat.listChannels({ params: { organization_id: props.org } })),
    [props.org]
  )

  return (
    <section aria-labelledby="slack-title">
      <h1 id="slack-title">Slack channels</h1>
      <Loading loaded={connection}>
        {(slack) =>
          slack === null ? (
            <Empty>
              Slack is not connected. Connect Slack first: an admin gives Bosun the Slack app's bot token and signing
              secret (<code className="code">PUT /api/v1/organizations/{props.org}/slack-connection</code>, see the
              README's Slack section). Then invite the bot to the channels it should work in. The connection's status is
              also under <Link href={orgPath(props.org, "apps")}>Connected apps</Link>.
            </Empty>
          ) : (
            <>
              <p className="muted">
                Connected to {slack.team_name ?? slack.team_id} as bot <code className="code">{slack.bot_user_id}</code>{" "}
                since {when(slack.created_at)}. Bosun always answers mentions; passive listening lets it also read
                messages that do not mention it.
              </p>
              <Loading loaded={channels}>
                {({ data }) =>
                  data.length === 0 ? (
                    <Empty>
                      The bot is in no channel yet. Invite it to a channel in Slack (<code>/invite @Bosun</code>); the
                      channel appears here.
                    </Empty>
                  ) : (
                    <table className="list" data-testid="slack-channels">
                      <thead>
                        <tr>
                          <th>Channel</th>
                          <th>Visibility</th>
                          <th>Passive listening</th>
                        </tr>
                      </thead>
                      <tbody>
                        {data.map((channel) => (
                          <ChannelRow key={channel.id} org={props.org} channel={channel} changed={reload} />
                        ))}
                      </tbody>
                    </table>
                  )
                }
              </Loading>
            </>
          )
        }
      </Loading>
    </section>
  )
}

export default SlackChannels
