ALTER TABLE proxy_nodes DROP COLUMN bouncer_key;
