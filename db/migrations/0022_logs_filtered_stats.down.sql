DROP TABLE logs_path_fts;
DROP TABLE logs_hourly_status_paths;
DROP TABLE logs_hourly_status_durations;
