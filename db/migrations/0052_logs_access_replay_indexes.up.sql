-- The replay of a geo policy (docs/access-control.md, "Try before it applies") reads every access row
-- of a window twice: grouped by client (address, country, AS number), then the paths of the refused
-- clients. Both indexes cover what each read needs and are ordered by what it groups, so neither read
-- touches the table nor sorts a million rows (bench/access-replay.bench.ts). Access rows only.
CREATE INDEX logs_access_client_idx ON logs (remote_ip, country, asn, ts_ms, host_id, rule_id) WHERE source = 'caddy_access';
CREATE INDEX logs_access_path_idx ON logs (path, remote_ip, country, asn, ts_ms, host_id, rule_id) WHERE source = 'caddy_access';
