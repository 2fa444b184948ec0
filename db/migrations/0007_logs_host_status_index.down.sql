DROP INDEX logs_host_status_id_idx;
