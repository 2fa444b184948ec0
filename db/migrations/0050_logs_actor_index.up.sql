-- Who opened a protected host (docs/access-control.md, "Who may enter a protected host"): the
-- access rows of admitted requests carry the signed-in user in `actor`, and
-- GET /api/logs?actor=<email> finds them. Only those rows (and audit-like ones) have an actor,
-- so the index is partial and small.
CREATE INDEX logs_actor_ts_idx ON logs (actor, ts_ms) WHERE actor IS NOT NULL;
