#!/usr/bin/env bash
# The one test entry: installs what the tests need, builds, runs every test.
# Extra arguments go to vitest (e.g. bash scripts/test.sh tests/integration/support-smoke.test.ts).
# Env: SKIP_NPM_CI=1 skips npm ci; PANEL_TEST_BROWSER=1 (or a tests/browser folder) adds chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

section() { printf '\n== %s ==\n' "$*"; }

want_browser=0
if [ "${PANEL_TEST_BROWSER:-0}" = 1 ] || [ -d tests/browser ]; then want_browser=1; fi

section "system packages"
missing=()
# Debian's caddy is the compatibility suite's stock 2.6.2; Debian's crowdsec
# package brings the offline hub and data the engine built below runs on; gcc
# builds CrowdSec (cgo sqlite); g++ and libre2-dev build the production Caddy's
# WAF regex engine (RE2 through cgo, deploy/proxy/caddy/build.sh); bind9 serves the DNS-01 tests' zone.
for bin in caddy pebble pebble-challtestsrv crowdsec cscli jq openssl curl ip gcc g++; do
  command -v "$bin" >/dev/null 2>&1 || missing+=("$bin")
done
[ -d /usr/share/crowdsec/hub ] || missing+=(crowdsec-hub)
dpkg-query -W libre2-dev >/dev/null 2>&1 || missing+=(libre2-dev)
# BIND 9 is the DNS-01 tests' authoritative server (named, tsig-keygen) and its update client (nsupdate);
# named and tsig-keygen live in /usr/sbin, which a non-root PATH may lack.
for bin in /usr/sbin/named /usr/sbin/tsig-keygen /usr/bin/nsupdate; do
  [ -x "$bin" ] || missing+=("$(basename "$bin")")
done
# Redis is the certificate storage of proxy nodes without a shared folder (redis-server, and
# redis-sentinel for the failover tests; redis-cli comes with them): docs/scaling.md.
for bin in /usr/bin/redis-server /usr/bin/redis-sentinel /usr/bin/redis-cli; do
  [ -x "$bin" ] || missing+=("$(basename "$bin")")
done
if [ "$want_browser" = 1 ] && ! command -v chromium >/dev/null 2>&1; then missing+=(chromium); fi
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
  pkgs=(caddy pebble crowdsec jq openssl curl iproute2 gcc g++ libre2-dev bind9 bind9-utils bind9-dnsutils redis-server redis-sentinel redis-tools)
  if [ "$want_browser" = 1 ]; then pkgs+=(chromium); fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${pkgs[@]}"
else
  echo "all present"
fi

if [ "${SKIP_NPM_CI:-0}" != 1 ]; then
  section "npm ci"
  npm ci --no-audit --no-fund
fi

section "edge components (production Caddy, CrowdSec)"
command -v go >/dev/null 2>&1 || { echo "go is not installed: the edge components build from Go modules" >&2; exit 1; }
t0=$SECONDS
edge_paths=$(bash scripts/build-edge.sh)
echo "$edge_paths"
echo "edge components ready in $((SECONDS - t0)) s"
# Only the KEY=path lines: anything else a build printed is not a variable.
while IFS= read -r line; do
  case $line in PANEL_*=*) export "$line" ;; esac
done <<<"$edge_paths"

section "build"
npm run build

section "type check"
npm run typecheck

section "lint and format check"
# Biome: the formatter's output and the lint rules of biome.json (docs/testing.md).
npm run lint

section "tests"
# Two lanes side by side, one vitest process each (vitest.config.ts, docs/testing.md "Two
# lanes"): this one prints as it goes, the other's output follows when both are done.
# Each lane's failures are printed again at the very end, so the last lines of a long
# log (often all a CI view keeps) say which tests failed and why. The exit code is
# non-zero when either lane failed.
first_log=$(mktemp)
rest_log=$(mktemp)
npx vitest run --project 'the rest' --passWithNoTests "$@" >"$rest_log" 2>&1 &
rest_pid=$!
trap 'kill "$rest_pid" 2>/dev/null || true' INT TERM
set +e
npx vitest run --project 'namespaces and browser' --passWithNoTests "$@" 2>&1 | tee "$first_log"
first=${PIPESTATUS[0]}
wait "$rest_pid"
second=$?
set -e
section "tests: the rest (the second lane)"
cat "$rest_log"
# vitest's own summary of a failed run: from its "Failed Tests" (or "Unhandled Errors")
# heading to the "Test Files" count, colour codes removed.
failures_of() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '/Failed Tests [0-9]|Unhandled Errors|Unhandled Rejection/ {p=1} p {print} /^ *Test Files/ {p=0}' | head -n 400
}
if [ "$first" -ne 0 ]; then
  section "failures: namespaces and browser (the first lane, repeated)"
  failures_of "$first_log"
fi
if [ "$second" -ne 0 ]; then
  section "failures: the rest (the second lane, repeated)"
  failures_of "$rest_log"
fi
rm -f "$first_log" "$rest_log"
echo "lanes: namespaces and browser exit $first, the rest exit $second"
[ "$first" -eq 0 ] && [ "$second" -eq 0 ]
