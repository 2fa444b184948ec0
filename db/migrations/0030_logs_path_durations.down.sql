DROP TABLE logs_hourly_queries;
DROP TABLE logs_hourly_path_durations;
