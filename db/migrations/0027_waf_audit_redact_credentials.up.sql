-- WAF audit rows kept the request's Cookie and Authorization headers and the
-- response's Set-Cookie whole (Coraza's audit parts B and F): a signed-in
-- operator's panel session token, or a basic-auth password, was readable by every
-- viewer of the logs. The parser now stores them as "REDACTED" (logs/parse.ts);
-- this does the same to the rows stored before. Rows whose raw was cut (not valid
-- JSON) are left as they are. Header names as Coraza writes them (lower case)
-- and as a client may spell them.
UPDATE logs
SET raw = json_replace(
  raw,
  '$.transaction.request.headers.cookie', json('["REDACTED"]'),
  '$.transaction.request.headers.Cookie', json('["REDACTED"]'),
  '$.transaction.request.headers.authorization', json('["REDACTED"]'),
  '$.transaction.request.headers.Authorization', json('["REDACTED"]'),
  '$.transaction.request.headers."proxy-authorization"', json('["REDACTED"]'),
  '$.transaction.request.headers."Proxy-Authorization"', json('["REDACTED"]'),
  '$.transaction.response.headers."set-cookie"', json('["REDACTED"]'),
  '$.transaction.response.headers."Set-Cookie"', json('["REDACTED"]')
)
WHERE source = 'waf_audit' AND json_valid(raw);
