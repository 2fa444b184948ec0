DROP INDEX passkeys_user;
DROP TABLE passkeys;
