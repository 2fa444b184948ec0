DROP TABLE IF EXISTS panel_ban_reasons;
