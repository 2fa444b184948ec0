DROP TABLE manual_certs;
DROP TABLE dns_providers;
