#!/usr/bin/env bash
# Builds the real edge the tests run against, from Go modules, into a cache
# outside the checkout keyed by the pinned versions:
#   - the production Caddy: deploy/proxy/caddy (the same folder the proxy image builds);
#   - CrowdSec (agent, local API, cscli) at $CROWDSEC_VERSION from its module source.
# A warm cache costs a hash of a few files. Facts: shared docs, edge-build.md.
#
#   bash scripts/build-edge.sh          build what is missing, print KEY=path lines
#   bash scripts/build-edge.sh --paths  print the paths only; exit 3 if anything is not built
#
# Env: PANEL_EDGE_CACHE (default ~/.cache/edge-panel).
set -euo pipefail
cd "$(dirname "$0")/.."

CROWDSEC_VERSION=v1.7.8
# The module's h1 hash: a download that does not match it is refused (the
# registry reachable here cannot answer checksum database look-ups).
CROWDSEC_MODULE_SUM='h1:FId0vZfYuVDmuSWOBiLEzfxywiIfMaYpSPLPx9liAVo='
# The build tags of CrowdSec's own Makefile (no re2_cgo: no libre2 needed).
CROWDSEC_TAGS='netgo,osusergo,expr_debug,nomsgpack,sqlite_omit_load_extension'

cache=${PANEL_EDGE_CACHE:-$HOME/.cache/edge-panel}
go_version=$(go env GOVERSION)

# The key covers every source file of the module, its build script and the RE2 it links statically.
re2_version=$(dpkg-query -W -f '${Version}' libre2-dev 2>/dev/null || echo none)
caddy_key=$(cat deploy/proxy/caddy/go.mod deploy/proxy/caddy/go.sum deploy/proxy/caddy/build.sh \
  $(find deploy/proxy/caddy -name '*.go' | LC_ALL=C sort) <(echo "$go_version $re2_version") | sha256sum | cut -c1-16)
caddy_dir="$cache/caddy-$caddy_key"
crowdsec_key=$(echo "$CROWDSEC_VERSION $CROWDSEC_MODULE_SUM $CROWDSEC_TAGS $go_version" | sha256sum | cut -c1-16)
crowdsec_dir="$cache/crowdsec-$CROWDSEC_VERSION-$crowdsec_key"

print_paths() {
  echo "PANEL_TEST_CADDY_BIN=$caddy_dir/caddy"
  echo "PANEL_TEST_CROWDSEC_BIN=$crowdsec_dir/crowdsec"
  echo "PANEL_TEST_CSCLI_BIN=$crowdsec_dir/cscli"
}

if [ "${1:-}" = "--paths" ]; then
  print_paths
  [ -x "$caddy_dir/caddy" ] && [ -x "$crowdsec_dir/crowdsec" ] && [ -x "$crowdsec_dir/cscli" ] || exit 3
  exit 0
fi

log() { printf '[build-edge] %s\n' "$*" >&2; }
mkdir -p "$cache"

build_caddy() {
  local t0=$SECONDS tmp="$caddy_dir.tmp.$$"
  log "building the production Caddy ($caddy_dir)"
  rm -rf "$tmp"; mkdir -p "$tmp"
  [ "$re2_version" != none ] || { log "libre2-dev is not installed (apt-get install libre2-dev): the WAF's regex engine links it"; exit 1; }
  # The image's build command (flags, tests of wafext, static link): one definition.
  sh deploy/proxy/caddy/build.sh "$tmp/caddy"
  "$tmp/caddy" list-modules > "$tmp/modules.txt"
  for m in crowdsec http.handlers.crowdsec http.handlers.appsec http.handlers.waf http.handlers.rate_limit \
           dns.providers.cloudflare dns.providers.route53 dns.providers.rfc2136 layer4.matchers.crowdsec \
           layer4.handlers.proxy layer4.matchers.tls layer4.handlers.proxy_protocol layer4.handlers.subroute \
           layer4.handlers.panel_refuse layer4.handlers.panel_conn_log layer4.matchers.panel_before; do
    grep -qx "$m" "$tmp/modules.txt" || { log "module $m is missing from the build"; exit 1; }
  done
  rm -rf "$caddy_dir"; mv "$tmp" "$caddy_dir"
  log "Caddy built in $((SECONDS - t0)) s: $("$caddy_dir/caddy" version)"
}

build_crowdsec() {
  local t0=$SECONDS tmp="$crowdsec_dir.tmp.$$" json dir sum
  log "building CrowdSec $CROWDSEC_VERSION ($crowdsec_dir)"
  json=$(GONOSUMDB='*' GOFLAGS= go mod download -json "github.com/crowdsecurity/crowdsec@$CROWDSEC_VERSION")
  dir=$(printf '%s' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  sum=$(printf '%s' "$json" | sed -n 's/^[[:space:]]*"Sum": "\(.*\)",$/\1/p')
  [ "$sum" = "$CROWDSEC_MODULE_SUM" ] || { log "crowdsec module hash $sum is not the pinned $CROWDSEC_MODULE_SUM"; exit 1; }
  rm -rf "$tmp"; mkdir -p "$tmp/src"
  cp -r "$dir/." "$tmp/src"; chmod -R u+w "$tmp/src"
  # The module's go.mod has replace directives, so it builds only inside its own source.
  (cd "$tmp/src" && GONOSUMDB='*' GOFLAGS=-mod=mod CGO_ENABLED=1 go build -trimpath -o "$tmp/" -tags "$CROWDSEC_TAGS" \
     -ldflags "-s -w -X github.com/crowdsecurity/go-cs-lib/version.Version=$CROWDSEC_VERSION" \
     ./cmd/crowdsec ./cmd/crowdsec-cli)
  mv "$tmp/crowdsec-cli" "$tmp/cscli"
  rm -rf "$tmp/src"
  rm -rf "$crowdsec_dir"; mv "$tmp" "$crowdsec_dir"
  log "CrowdSec built in $((SECONDS - t0)) s: $("$crowdsec_dir/crowdsec" -version 2>&1 | grep -m1 -o 'version: .*')"
}

t_all=$SECONDS
# Standard output carries the KEY=path lines alone (scripts/test.sh exports each line):
# everything the builds print (go test's "ok" lines, compiler output) goes to standard error.
{
  [ -x "$caddy_dir/caddy" ] || build_caddy
  [ -x "$crowdsec_dir/crowdsec" ] && [ -x "$crowdsec_dir/cscli" ] || build_crowdsec
} >&2
log "edge components ready in $((SECONDS - t_all)) s"
print_paths
