ALTER TABLE rules DROP COLUMN header_rules;
