DROP INDEX logs_level_ts_idx;
DROP TABLE log_offsets;
