-- Web push subscriptions (browsers that asked the panel for notifications).
-- The endpoint is the push service's URL for that browser; the encryption keys
-- of the subscription (p256dh, auth) are sealed with the secrets box.
CREATE TABLE push_subscriptions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  endpoint TEXT NOT NULL UNIQUE,
  keys TEXT NOT NULL,                -- sealed JSON {p256dh, auth}
  user_id INTEGER REFERENCES users(id) ON DELETE CASCADE,
  user_agent TEXT,
  last_status TEXT,                  -- ok | failed
  last_error TEXT,
  last_sent_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- Hourly roll-up of the blocked requests (403/429 access rows, WAF audit rows
-- with a status >= 400) per host, address and country: the security dashboard
-- reads it instead of scanning a day of raw rows. Filled and trimmed with the
-- other roll-ups (server/utils/logs/rollup.ts).
CREATE TABLE logs_hourly_blocked (
  hour_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  host_id INTEGER NOT NULL,
  status INTEGER NOT NULL,
  remote_ip TEXT NOT NULL,
  country TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (hour_ms, source, host_id, status, remote_ip, country)
) WITHOUT ROWID;

-- Rows already rolled up before this table existed are counted once here.
INSERT INTO logs_hourly_blocked (hour_ms, source, host_id, status, remote_ip, country, n)
  SELECT (ts_ms / 3600000) * 3600000, source, coalesce(host_id, 0), coalesce(status, 0), coalesce(remote_ip, ''), coalesce(country, ''), count(*)
  FROM logs
  WHERE id <= (SELECT last_id FROM logs_rollup_state WHERE id = 1)
    AND ((source = 'caddy_access' AND status IN (403, 429)) OR (source = 'waf_audit' AND status >= 400))
  GROUP BY 1, 2, 3, 4, 5, 6;
