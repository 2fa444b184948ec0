ALTER TABLE logs DROP COLUMN waf_rules;
