-- A trigram index of each row's searchable text, for the free-text filter
-- (`query`: path, user agent, message and the raw line; docs/logs.md). As the
-- path index (0022): contentless, detail=none, case-sensitive like instr();
-- a query ANDs the rarest trigrams of the text and instr() on the row
-- confirms. It has a mark of its own (text_last_id): the ingester's loop fills
-- it after the roll-ups have caught up, in its own chunks, and empties it when
-- the setting logs.text_index is turned off; rows above the mark are read by
-- rowid. Nothing is indexed here: the loop builds it in the background.
CREATE VIRTUAL TABLE logs_text_fts USING fts5(body, content='', contentless_delete=1, tokenize='trigram case_sensitive 1', detail=none);
ALTER TABLE logs_rollup_state ADD COLUMN text_last_id INTEGER NOT NULL DEFAULT 0;
