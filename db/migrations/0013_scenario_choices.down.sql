-- Without the column every row means "disabled": re-enabled rows must go first.
DELETE FROM scenario_overrides WHERE disabled = 0;
ALTER TABLE scenario_overrides DROP COLUMN disabled;
