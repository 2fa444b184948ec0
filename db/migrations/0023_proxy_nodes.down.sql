DROP TABLE IF EXISTS proxy_nodes;
