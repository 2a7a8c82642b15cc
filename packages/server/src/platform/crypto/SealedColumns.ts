/**
 * Every sealed column of the schema (docs/interface.md: Secret-rotation procedure 6). Rotation
 * walks this list in order, and a test checks that every `bytea` column of the schema is on it, so
 * a new sealed column cannot be forgotten by rotation.
 *
 * Not here, by design: short-lived sealed state outside the database (installation tokens in the
 * cache) re-seals itself under the active key when it expires.
 */
export interface SealedColumn {
  readonly table: string
  readonly column: string
  /** The primary key column; its value (as text) is the row id bound into the envelope. */
  readonly idColumn: string
}

export const SealedColumns: ReadonlyArray<SealedColumn> = [
  { table: "github_apps", column: "client_secret", idColumn: "organization_id" },
  { table: "github_apps", column: "private_key", idColumn: "organization_id" },
  { table: "github_apps", column: "webhook_secret", idColumn: "organization_id" },
  { table: "linear_connections", column: "webhook_secret", idColumn: "organization_id" },
  { table: "linear_connections", column: "access_token", idColumn: "organization_id" },
  { table: "linear_connections", column: "refresh_token", idColumn: "organization_id" },
  { table: "linear_connections", column: "oauth_client_secret", idColumn: "organization_id" },
  { table: "slack_connections", column: "bot_token", idColumn: "organization_id" },
  { table: "slack_connections", column: "signing_secret", idColumn: "organization_id" },
  { table: "organization_secrets", column: "value", idColumn: "id" },
  { table: "agent_connections", column: "auth", idColumn: "id" },
  { table: "mcp_server_secrets", column: "headers", idColumn: "id" },
  { table: "device_authorizations", column: "device_code", idColumn: "id" },
  { table: "device_authorizations", column: "access_token", idColumn: "id" },
  { table: "device_authorizations", column: "refresh_token", idColumn: "id" }
]

/** Where an envelope of `column` in row `rowId` lives: the AAD it is sealed with. */
export const placeOf = (column: SealedColumn, rowId: string) => ({
  table: column.table,
  column: column.column,
  rowId
})
