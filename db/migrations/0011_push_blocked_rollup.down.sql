DROP TABLE logs_hourly_blocked;
DROP TABLE push_subscriptions;
