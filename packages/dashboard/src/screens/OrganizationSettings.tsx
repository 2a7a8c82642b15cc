/**
 * Organization settings (docs/interface.md: Organization endpoints `GET`/`PUT`/`DELETE .../configuration`):
 * the organization's own configuration, which every repository inherits unless it sets its own,
 * edited group by group against the model catalog of the organization's agent credentials and
 * the sandbox providers this instance is set up for; and the Getting started checklist until
 * the organization has done every step. Members see it all read-only.
 */
import { useState } from "react"
import { call } from "../api/client.ts"
import { useLoad } from "../api/useLoad.ts"
import { ConfigurationEditor } from "../configuration/ConfigurationEditor.tsx"
import { GettingStarted } from "../setup/GettingStarted.tsx"
import { Loading } from "../ui.tsx"

const OrganizationSettings = (props: { readonly org: string; readonly admin: boolean }) => {
  const [version, setVersion] = useState(0)
  const [configuration, reload] = useLoad(
    () => call((client) => client.configuration.getOrganization({ params: { organization_id: props.org } })),
    [props.org]
  )
  const [connection] = useLoad(
    () => call((client) => client.agentConnection.get({ params: { organization_id: props.org }, query: {} })),
    [props.org]
  )
  const [instance] = useLoad(() => call((client) => client.instance.info()), [])

  return (
    <section aria-labelledby="settings-title">
      <h1 id="settings-title">Organization settings</h1>
      <GettingStarted org={props.org} version={version} />
      <Loading loaded={configuration}>
        {({ data }) => (
          <ConfigurationEditor
            org={props.org}
            repositoryId={null}
            configuration={data}
            catalog={connection.data?.data.catalog.catalog ?? null}
            catalogProblem={connection.status === "failed" ? connection.error : null}
            sandboxProviders={instance.data?.data.sandbox_providers ?? null}
            canWrite={props.admin}
            changed={() => {
              reload()
              setVersion((n) => n + 1)
            }}
          />
        )}
      </Loading>
    </section>
  )
}

export default OrganizationSettings
