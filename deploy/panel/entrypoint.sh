#!/bin/sh
# Secrets as files: for each NAME below, NAME_FILE=<path> puts the file's content
# into NAME (unless NAME is already set), so that keys never sit in the compose
# file or in `docker inspect`. The panel itself reads only its environment
# (server/utils/core/config.ts).
set -eu
for name in PANEL_MASTER_KEY LAPI_BOUNCER_KEY LAPI_PANEL_BOUNCER_KEY LAPI_MACHINE_PASSWORD PANEL_DATABASE_AUTH_TOKEN PANEL_ADMIN_PASSWORD PROVIDER_A_API_TOKEN; do
  eval "file=\${${name}_FILE:-}"
  if [ -n "$file" ]; then
    eval "current=\${${name}:-}"
    if [ -z "$current" ]; then
      if [ ! -r "$file" ]; then
        echo "panel-entrypoint: ${name}_FILE=$file is not readable (did the init service run?)" >&2
        exit 1
      fi
      value=$(cat "$file")
      export "$name=$value"
    fi
    unset "${name}_FILE"
  fi
done
exec "$@"
