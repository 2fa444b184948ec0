#!/bin/sh
# The one build command of the production Caddy, run by deploy/proxy/Dockerfile and
# by scripts/build-edge.sh for the tests, so the image and the tests get the same
# binary. Needs Go, a C++ compiler and Debian's libre2-dev (docs/edge-build.md).
#
#   sh deploy/proxy/caddy/build.sh OUTPUT
#
# - re2_cgo: the WAF's @rx runs on RE2 through cgo (wafext/), linked statically
#   (libre2.a), so the runtime needs no libre2 and the binary runs on any Linux
#   of the same architecture, the Alpine-based caddy image included.
# - memoize_builders: one compiled matcher per pattern for all hosts' WAFs.
# - netgo, osusergo: no glibc resolver or user lookup in a static binary.
# - -mod=readonly: every module is checked against the committed go.sum.
# - runtime.godebugDefault=cgocheck=0: the binary's default GODEBUG skips the runtime's
#   check of every pointer handed to C, 8 % of the full CRS's work (one check per RE2
#   call, docs/edge-build.md). The check guards against misuse of cgo, not against input:
#   the wafext tests above run with it on, on every pattern of the CRS. GODEBUG=cgocheck=1
#   in the environment turns it back on.
set -eu
out=${1:?usage: build.sh OUTPUT}
case $out in /*) ;; *) out="$PWD/$out" ;; esac
cd "$(dirname "$0")"
export CGO_ENABLED=1 GOFLAGS=-mod=readonly
# RE2's C wrapper warns about a string constant; nothing to act on here.
export CGO_CXXFLAGS="${CGO_CXXFLAGS:--O2 -g} -Wno-write-strings"
tags=re2_cgo,memoize_builders,netgo,osusergo
# The project's own Go code (WAF operators, body limits, stream handlers, the DNS check, the geo matcher,
# the Redis storage) is tested before it ships.
go test -count=1 -tags "$tags" ./wafext/ ./streamext/ ./dnscheck/ ./geoext/ ./storageext/
go build -trimpath -tags "$tags" -ldflags "-s -w -X runtime.godebugDefault=cgocheck=0 -linkmode external -extldflags -static" -o "$out" .
# A dynamic binary would fail at start in the runtime image (no libre2 there).
if readelf -d "$out" 2>/dev/null | grep -q NEEDED; then
  echo "build.sh: $out links shared libraries; it must be static" >&2
  exit 1
fi
