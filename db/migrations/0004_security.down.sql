DROP TABLE scenario_overrides;
DROP TABLE whitelist_entries;
