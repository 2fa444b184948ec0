-- Every rule a WAF audit entry matched, with its severity and anomaly score, as a JSON array
-- ([{"id":942100,"severity":"CRITICAL","score":5,"msg":"..."}]). The row kept only the most
-- severe rule, so the panel could not say which set of exclusions brings a request under the
-- threshold, nor preview one against the stored rows (docs/waf.md, "Exclusions that unblock").
-- Rows ingested before this migration have NULL; their raw line still holds the rules.
ALTER TABLE logs ADD COLUMN waf_rules TEXT;
