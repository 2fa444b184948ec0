-- Who and where may enter each host (docs/access-control.md).
-- A host's and a path rule's geo and network policy (JSON, server/utils/access/schemas.ts; NULL: none).
ALTER TABLE hosts ADD COLUMN geo_policy TEXT;
ALTER TABLE rules ADD COLUMN geo_policy TEXT;
-- Who may enter a host that asks for the panel's login: user ids and group names; both empty
-- (every existing host) means any signed-in user, as before.
ALTER TABLE hosts ADD COLUMN auth_allowed_users TEXT NOT NULL DEFAULT '[]';
ALTER TABLE hosts ADD COLUMN auth_allowed_groups TEXT NOT NULL DEFAULT '[]';
-- Panel-local groups, and the groups the OIDC group claim gave at the user's last login.
ALTER TABLE users ADD COLUMN groups TEXT NOT NULL DEFAULT '[]';
ALTER TABLE users ADD COLUMN oidc_groups TEXT NOT NULL DEFAULT '[]';
-- The client's AS number on access rows (from asn.mmdb at ingestion, like country): the replay
-- of a geo policy counts by it.
ALTER TABLE logs ADD COLUMN asn INTEGER;
