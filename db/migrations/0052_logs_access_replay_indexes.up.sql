-- The replay of a geo policy (docs/access-control.md, "Try before it applies") reads every access row
-- of a window twice: grouped by client (address, country, AS number), then the paths of the refused
-- clients. One covering index, ordered by what the first read groups and carrying the path for the
-- second, so that neither read touches the table (bench/access-replay.bench.ts). Access rows only.
CREATE INDEX logs_access_client_idx ON logs (remote_ip, country, asn, ts_ms, host_id, rule_id, path) WHERE source = 'caddy_access';
