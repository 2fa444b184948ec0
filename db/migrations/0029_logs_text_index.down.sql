ALTER TABLE logs_rollup_state DROP COLUMN text_last_id;
DROP TABLE logs_text_fts;
