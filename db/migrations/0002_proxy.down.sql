DROP TABLE rules;
DROP TABLE host_names;
DROP TABLE hosts;
DROP TABLE target_groups;
