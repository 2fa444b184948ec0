-- The reason an operator gave for a ban made in the panel (POST /api/security/decisions).
-- The engine keeps it only inside the alert's message, which its decision stream does
-- not carry, so the decision list reads it from here (by value: the panel posts one
-- canonical value per ban; a later ban of the same value replaces the row).
CREATE TABLE panel_ban_reasons (
  value TEXT PRIMARY KEY,
  reason TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL
);
