DROP TABLE notification_rules;
DROP TABLE notification_channels;
