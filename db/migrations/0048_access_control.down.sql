ALTER TABLE logs DROP COLUMN asn;
ALTER TABLE users DROP COLUMN oidc_groups;
ALTER TABLE users DROP COLUMN groups;
ALTER TABLE hosts DROP COLUMN auth_allowed_groups;
ALTER TABLE hosts DROP COLUMN auth_allowed_users;
ALTER TABLE rules DROP COLUMN geo_policy;
ALTER TABLE hosts DROP COLUMN geo_policy;
