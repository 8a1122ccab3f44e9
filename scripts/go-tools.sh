#!/usr/bin/env bash
# Installs the Go tools make lint, make vulncheck and make e2e run (staticcheck, govulncheck,
# gotestsum), at pinned versions, from the Go module proxy into a per-user cache (nothing in the repository or its go.mod files), and builds
# the vulnerability database govulncheck reads from the pinned golang.org/x/vulndb module (the
# proxy is the only network the machines have; govulncheck's default database is not reachable).
# Prints the directory holding staticcheck, govulncheck, gotestsum and vulndb/.
set -euo pipefail
STATICCHECK_VERSION=${STATICCHECK_VERSION:-v0.8.2}
GOVULNCHECK_VERSION=${GOVULNCHECK_VERSION:-v1.9.0}
GOTESTSUM_VERSION=${GOTESTSUM_VERSION:-v1.13.0}
VULNDB_VERSION=${VULNDB_VERSION:-v0.0.0-20261105234957-e22db6528018}
dir="${XDG_CACHE_HOME:-$HOME/.cache}/etcdx-tools/sc-$STATICCHECK_VERSION-vc-$GOVULNCHECK_VERSION-ts-$GOTESTSUM_VERSION-db-$VULNDB_VERSION"
mkdir -p "$dir"
export GOWORK=off GOFLAGS=-mod=mod
[ -x "$dir/staticcheck" ] || GOBIN="$dir" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" >&2
[ -x "$dir/govulncheck" ] || GOBIN="$dir" go install "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION" >&2
[ -x "$dir/gotestsum" ] || GOBIN="$dir" go install "gotest.tools/gotestsum@$GOTESTSUM_VERSION" >&2
if [ ! -f "$dir/vulndb/index/db.json" ]; then
	src=$(cd "$dir" && go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[ -d "$src/data/osv" ] || { echo "golang.org/x/vulndb@$VULNDB_VERSION has no data/osv" >&2; exit 1; }
	rm -rf "$dir/vulndb.tmp"
	(cd "$dir" && go run "golang.org/x/vulndb/cmd/indexdb@$VULNDB_VERSION" -vulns "$src/data/osv" -out "$dir/vulndb.tmp") >&2
	mv "$dir/vulndb.tmp" "$dir/vulndb"
fi
echo "$dir"
