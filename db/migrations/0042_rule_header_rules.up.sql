-- Header rules of a path rule (docs/hosts.md, "Header rules"): the same shape as the
-- host's, applied after them to the requests the rule matches. '[]': an existing rule
-- keeps its configuration byte for byte.
ALTER TABLE rules ADD COLUMN header_rules TEXT NOT NULL DEFAULT '[]';
