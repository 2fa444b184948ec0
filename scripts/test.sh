#!/usr/bin/env bash
# The one test entry: installs what the tests need, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

section() { printf '\n== %s ==\n' "$*"; }

section "system packages"
missing=()
for bin in caddy pebble pebble-challtestsrv crowdsec cscli jq openssl curl ip; do
  command -v "$bin" >/dev/null 2>&1 || missing+=("$bin")
done
if [ -d tests/browser ] && [ ! -x /usr/bin/chromium ]; then missing+=(chromium); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "missing: ${missing[*]}; installing from Debian"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  # Without a non-empty credentials file crowdsec's postinst tries to register
  # with the Central API, which fails offline and leaves apt with exit 100.
  $SUDO mkdir -p /etc/crowdsec
  if [ ! -s /etc/crowdsec/online_api_credentials.yaml ]; then
    echo '# no CAPI (offline)' | $SUDO tee /etc/crowdsec/online_api_credentials.yaml >/dev/null
  fi
  pkgs=(caddy pebble crowdsec jq openssl curl iproute2)
  if [ -d tests/browser ]; then pkgs+=(chromium); fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${pkgs[@]}"
else
  echo "all present"
fi

if [ "${SKIP_NPM_CI:-0}" != 1 ]; then
  section "npm ci"
  npm ci --no-audit --no-fund
fi

section "build"
npm run build

section "tests"
exec npx vitest run "$@"
