ALTER TABLE hosts DROP COLUMN engine_down_refuse;
