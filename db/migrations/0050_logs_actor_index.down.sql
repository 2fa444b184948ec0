DROP INDEX logs_actor_ts_idx;
