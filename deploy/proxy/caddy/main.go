// The production Caddy: Caddy's own command and standard modules plus every
// plugin the panel's configuration uses. This folder is the one list of plugin
// versions: deploy/proxy/Dockerfile builds it, and scripts/test.sh builds it
// for the tests (scripts/build-edge.sh), so the image and the tests cannot
// disagree about a version.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	// Security engine bouncer: the crowdsec app, HTTP handler, AppSec handler, layer4 matcher.
	_ "github.com/hslatman/caddy-crowdsec-bouncer/appsec"
	_ "github.com/hslatman/caddy-crowdsec-bouncer/http"
	_ "github.com/hslatman/caddy-crowdsec-bouncer/layer4"

	// Streams (docs/streams.md): the layer-4 proxy, the TLS ClientHello matcher for SNI
	// routing, PROXY protocol accepted from trusted sources, and sub-routes.
	_ "github.com/edge-panel/edge-proxy/streamext"
	_ "github.com/mholt/caddy-l4/modules/l4proxy"
	_ "github.com/mholt/caddy-l4/modules/l4proxyprotocol"
	_ "github.com/mholt/caddy-l4/modules/l4subroute"
	_ "github.com/mholt/caddy-l4/modules/l4tls"

	// WAF (Coraza with the OWASP Core Rule Set embedded).
	_ "github.com/corazawaf/coraza-caddy/v2"

	// The WAF's faster operators (RE2 through cgo) and the per-host body limits.
	_ "github.com/edge-panel/edge-proxy/wafext"

	// Per-host rate limit.
	_ "github.com/mholt/caddy-ratelimit"

	// The DNS credentials check the panel asks for (admin API POST /panel/dns-check).
	_ "github.com/edge-panel/edge-proxy/dnscheck"

	// Geo and network rules per host and path rule (docs/access-control.md).
	_ "github.com/edge-panel/edge-proxy/geoext"

	// Certificates and ACME locks in Redis, for nodes without a shared folder, and what a
	// node tells the panel about its storage (docs/scaling.md): caddy.storage.panel_redis,
	// admin API GET /panel/storage/health and /panel/storage/certificates.
	_ "github.com/edge-panel/edge-proxy/storageext"

	// DNS-01 providers (docs/dns-providers-build.md: each module's id, version and JSON fields).
	_ "github.com/caddy-dns/acmedns"
	_ "github.com/caddy-dns/alidns"
	_ "github.com/caddy-dns/azure"
	_ "github.com/caddy-dns/bunny"
	_ "github.com/caddy-dns/cloudflare"
	_ "github.com/caddy-dns/cloudns"
	_ "github.com/caddy-dns/digitalocean"
	_ "github.com/caddy-dns/duckdns"
	_ "github.com/caddy-dns/gandi"
	_ "github.com/caddy-dns/godaddy"
	_ "github.com/caddy-dns/googleclouddns"
	_ "github.com/caddy-dns/hetzner"
	_ "github.com/caddy-dns/huaweicloud"
	_ "github.com/caddy-dns/ionos"
	_ "github.com/caddy-dns/linode"
	_ "github.com/caddy-dns/loopia"
	_ "github.com/caddy-dns/luadns"
	_ "github.com/caddy-dns/namecheap"
	_ "github.com/caddy-dns/netcup"
	_ "github.com/caddy-dns/porkbun"
	_ "github.com/caddy-dns/powerdns"
	_ "github.com/caddy-dns/rfc2136"
	_ "github.com/caddy-dns/route53"
)

func main() {
	caddycmd.Main()
}
