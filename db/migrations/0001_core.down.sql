DROP TABLE logs;
DROP TABLE login_attempts;
DROP TABLE sessions;
DROP TABLE users;
DROP TABLE runtime_state;
DROP TABLE settings;
