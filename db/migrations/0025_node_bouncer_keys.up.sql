-- A proxy node's own bouncer key (docs/scaling.md, "One engine for all bouncers"): the
-- key its Caddy's bouncer authenticates to the security engine's local API with, sealed
-- by the secrets box like the TLS client key. NULL: the node uses LAPI_BOUNCER_KEY, the
-- key every node shared before.
ALTER TABLE proxy_nodes ADD COLUMN bouncer_key TEXT;
