-- Agent-credential fingerprints become random labels (`fp:` and 16 hex digits) instead of the
-- first 16 hex digits of an unkeyed SHA-256 of the credentials, which let anyone who could read
-- one test a guessed key offline. Every stored `sha256:` value is replaced; within a scope, a
-- credential version and the discoveries queued for it keep sharing one label, so a discovery
-- still shows which credentials it was for. gen_random_uuid() draws from a strong random source.
WITH legacy AS (
  SELECT organization_id, scope, fingerprint AS old, 'fp:' || left(md5(gen_random_uuid()::text), 16) AS new
  FROM (
    SELECT organization_id, coalesce(repository_id, '') AS scope, auth_fingerprint AS fingerprint
    FROM agent_connections
    UNION
    SELECT organization_id, coalesce(repository_id, ''), credential_fingerprint
    FROM agent_catalog_discoveries
  ) AS stored
  WHERE fingerprint LIKE 'sha256:%'
),
connections AS (
  UPDATE agent_connections c SET auth_fingerprint = l.new
  FROM legacy l
  WHERE l.organization_id = c.organization_id AND l.scope = coalesce(c.repository_id, '')
    AND l.old = c.auth_fingerprint
  RETURNING c.id
)
UPDATE agent_catalog_discoveries d SET credential_fingerprint = l.new
FROM legacy l
WHERE l.organization_id = d.organization_id AND l.scope = coalesce(d.repository_id, '')
  AND l.old = d.credential_fingerprint;
