-- Access lists (docs/access-lists.md): named, reusable sets of basic-auth users
-- and IP/CIDR rules, attached to any number of hosts (a host has at most one).
CREATE TABLE access_lists (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  realm TEXT NOT NULL DEFAULT 'restricted',
  -- What a source that no rule matches gets.
  default_action TEXT NOT NULL DEFAULT 'allow' CHECK (default_action IN ('allow', 'deny')),
  -- JSON array of {action: allow|deny, source: ip-or-cidr}, first match wins.
  ip_rules TEXT NOT NULL DEFAULT '[]',
  -- JSON array of {username, hash}: bcrypt hashes only, the clear password is never stored.
  users TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE host_access_lists (
  host_id INTEGER PRIMARY KEY REFERENCES hosts(id) ON DELETE CASCADE,
  access_list_id INTEGER NOT NULL REFERENCES access_lists(id)
);
CREATE INDEX host_access_lists_list_idx ON host_access_lists (access_list_id);
