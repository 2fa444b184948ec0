-- A scenario re-enabled in the panel is remembered too (disabled = 0, with its
-- hub link target), so that the drift detector can restore its link when it goes
-- missing; before, re-enabling deleted the row and the panel forgot the target.
-- Every existing row is a disabled scenario.
ALTER TABLE scenario_overrides ADD COLUMN disabled INTEGER NOT NULL DEFAULT 1;
