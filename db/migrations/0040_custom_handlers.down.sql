ALTER TABLE hosts DROP COLUMN custom_handlers_at;
ALTER TABLE hosts DROP COLUMN custom_handlers;
