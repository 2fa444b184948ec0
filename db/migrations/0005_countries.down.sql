DROP TABLE leases;
DROP TABLE country_bans;
DROP TABLE country_jobs;
