-- Nothing to undo: the redacted values are gone on purpose (the schema is unchanged).
SELECT 1;
