-- Every node's logs (docs/scaling.md, issue 24 item 4): which proxy node wrote a
-- row. node_id is the node's id (proxy_nodes.id, never reused), node_name its name
-- when the row was ingested (as host_domain keeps the host's name). NULL on audit
-- rows and on rows ingested before this migration (all from node 1, the only node then).
ALTER TABLE logs ADD COLUMN node_id INTEGER;
ALTER TABLE logs ADD COLUMN node_name TEXT;
