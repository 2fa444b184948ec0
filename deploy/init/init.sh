#!/bin/sh
# The stack's one-shot init step (service `init` in deploy/compose.yaml), run by
# `docker compose up` before the other services, as root, in the engine's image.
# Idempotent: what exists is kept, so it runs harmlessly at every `up`.
#
# 1. Generates the secrets once into /run/panel-secrets (volume panel-secrets):
#      master_key        PANEL_MASTER_KEY: seals DNS tokens, private keys, SMTP/OIDC secrets
#      bouncer_key       the bouncer key the panel hands to the proxy
#      panel_bouncer_key the panel's own bouncer key (LAPI_PANEL_BOUNCER_KEY): its decision mirror
#      machine_password  the password of the engine machine `panel` (alerts, decision deletion)
# 2. Fills the engine's config folder from the image's defaults on the first run
#    (what the engine's own start script would do), so that step 3 can hand it over.
# 3. Gives the panel's data and the shared folders to uid 1000, the user the panel and the proxy run as:
#    the panel writes the whitelist parser, scenario links, profiles.yaml and the
#    CRS plugin into the engine's folders, and reads the proxy's logs and storage.
#    The engine runs as root and still reads everything.
set -eu
umask 077
SECRETS=/run/panel-secrets
mkdir -p "$SECRETS"
for name in master_key bouncer_key panel_bouncer_key machine_password; do
  if [ -s "$SECRETS/$name" ]; then
    echo "init: $name kept"
  else
    # 48 random bytes, base64 without / + = (safe in YAML, shell and URLs), 64 characters.
    head -c 48 /dev/urandom | base64 | tr -d '/+=\n' | head -c 64 > "$SECRETS/$name"
    echo "init: $name created"
  fi
done

if [ ! -e /etc/crowdsec/config.yaml ] && [ -d /staging/etc/crowdsec ]; then
  cp -an /staging/etc/crowdsec/* /etc/crowdsec/
  echo "init: engine configuration populated from the image"
fi
mkdir -p /etc/crowdsec/parsers/s02-enrich /etc/crowdsec/scenarios /var/lib/crowdsec/data/crs-plugins
# The engine's database, made empty here before the engine's first start so that it belongs to
# uid 1000 from the start: the panel reads it (read-only) for the bouncers and machines. A
# database the engine makes itself is root's, mode 0640, until the next `up`; in this one the
# engine creates its tables and keeps the owner, and SQLite gives its -wal and -shm files the
# database's owner (checked with the engine v1.7.8; docs/security-engine.md).
[ -e /var/lib/crowdsec/data/crowdsec.db ] || : >/var/lib/crowdsec/data/crowdsec.db

# The geolocation databases live in a volume of their own, mounted into the proxy read-only (its
# geo matcher reads them; docs/access-control.md): the panel's data, master key included, never is.
# A panel that kept them in its data folder before gets them copied over once.
if [ -d /var/lib/panel/geoip ] && [ -z "$(ls -A /var/lib/geoip)" ]; then
  cp -p /var/lib/panel/geoip/*.mmdb /var/lib/geoip/ 2>/dev/null || true
fi

chown -R 1000:1000 "$SECRETS" /var/lib/panel /var/lib/geoip /etc/crowdsec /var/lib/crowdsec/data /var/log/caddy /var/lib/caddy /etc/panel-certs
chmod 0700 "$SECRETS" && chmod 0600 "$SECRETS"/*
echo "init: done"
