CREATE TABLE notification_channels (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  type TEXT NOT NULL CHECK (type IN ('webhook', 'email', 'chat', 'push')),
  enabled INTEGER NOT NULL DEFAULT 1,
  config TEXT NOT NULL,              -- JSON without the secret parts
  secrets TEXT,                      -- sealed JSON of the secret parts
  last_status TEXT,                  -- ok | failed
  last_error TEXT,
  last_sent_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE notification_rules (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  events TEXT NOT NULL,              -- JSON array of event names
  channel_ids TEXT NOT NULL,         -- JSON array of channel ids
  throttle_seconds INTEGER NOT NULL DEFAULT 0,
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
