-- A host that refuses every request (503) while the security engine is unreachable.
ALTER TABLE hosts ADD COLUMN engine_down_refuse INTEGER NOT NULL DEFAULT 0;
