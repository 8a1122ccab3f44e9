#!/usr/bin/env bash
# Verifies flake.nix offline (make nix-check), against the local stand-in for nixpkgs under
# nix/nixpkgs-standin, since nixpkgs itself cannot be downloaded here:
#   1. the flake parses and evaluates for x86_64-linux and aarch64-linux (nix flake show/check);
#   2. this system's binaries and images build through it, with the vendor tree fetched by
#      `go work vendor` in a fixed-output derivation whose hash is nix/vendor-hash;
#   3. the binaries are static and stamped with VERSION and the git revision; nix run works;
#      the flake's unit-test check evaluates (NIX_CHECK_UNIT=1: builds, so the tests pass in it);
#   4. the images load into Docker and run, a member of the etcd image bootstrapping through the
#      discovery image (when a Docker engine is present).
# Needs nix (Debian's nix-bin) and a committed flake: Nix only sees files git tracks.
set -euo pipefail
# With pipefail, `cmd | grep -q` can fail when grep exits before cmd has written everything
# (SIGPIPE); pipelines below use `grep >/dev/null`, which reads to the end.
# shows WANT CMD...: runs CMD, copies its output to stderr and checks it holds WANT. (`tee
# /dev/stderr` would reopen, and so truncate, a log file that stderr is redirected to.)
shows() { local want=$1 out; shift; out=$("$@"); printf '%s\n' "$out" >&2; grep -F -- "$want" >/dev/null <<<"$out"; }
cd "$(dirname "$0")/.."
command -v nix >/dev/null || { echo "nix-check: nix is not installed (apt-get install nix-bin)" >&2; exit 1; }

# Settings for this run only: flakes on, no binary cache (none is reachable), and no sandbox so
# the stand-in may use the host's Go and tools.
export NIX_CONFIG="experimental-features = nix-command flakes
sandbox = false
substituters =
warn-dirty = false"
standin="path:$PWD/nix/nixpkgs-standin"
flake=(--override-input nixpkgs "$standin" --no-write-lock-file)
system=$(nix eval --impure --raw --expr builtins.currentSystem)
version=$(cat VERSION)
# The upstream etcd release the default level implements (pkg/buildinfo: Level and its table).
level=$(sed -n 's/^var Level = "\(3\.[0-9]*\)"$/\1/p' pkg/buildinfo/buildinfo.go)
etcdversion=$(sed -n "s/^\t\"$level\": \"\(3\.[0-9]*\.[0-9]*\)\",\$/\1/p" pkg/buildinfo/buildinfo.go)
[ -n "$etcdversion" ] || { echo "nix-check: cannot read the default level's upstream release from pkg/buildinfo" >&2; exit 1; }
if [ -z "$(git status --porcelain --untracked-files=no)" ]; then
	revision=$(git rev-parse --short=7 HEAD)
else
	revision=dirty
fi

step() { printf '\n== %s\n' "$*"; }
# Every command is told not to write flake.lock (nixpkgs is overridden); leave out its notice.
nix() { command nix "$@" 2> >(grep -v "not writing modified lock file\|Added input '\|nixpkgs-standin?lastModified\|^    'git+file:\|^    follows '" >&2); }

step "nix flake show"
nix flake show "${flake[@]}" .

step "nix flake check (evaluates every output on every system)"
nix flake check "${flake[@]}" --no-build .

step "packages of $system: every output is a derivation"
attrs=$(nix eval "${flake[@]}" --json ".#packages.$system" --apply builtins.attrNames)
echo "$attrs"
for want in default etcd etcdctl etcdutl discovery upgradelab etcd-image discovery-image level36 level35; do
	grep -q "\"$want\"" <<<"$attrs" || { echo "nix-check: packages.$system.$want is missing" >&2; exit 1; }
done
# A main package in the tree without a flake package would ship nothing: catch it here.
while read -r dir; do
	name=$(basename "$dir")
	[ "$dir" = server ] && name=etcd
	grep -q "\"$name\"" <<<"$attrs" || { echo "nix-check: main package ./$dir has no flake package" >&2; exit 1; }
done < <(go list -f '{{if eq .Name "main"}}{{.Dir}}{{end}}' ./server/... ./etcdctl/... ./etcdutl/... ./discovery/... ./upgradelab/... |
	sed "s#^$PWD/##" | grep -v '/testdata/\|^e2e/')

# Builds go through a wrapper flake that takes this repository as an input: a flake evaluated
# with --override-input counts as dirty and loses self.shortRev, an input keeps its revision.
wrapper=$(mktemp -d)
cleanup=("rm -rf '$wrapper'")
# Undo in reverse order: containers go before the images they run.
trap 'for ((i = ${#cleanup[@]} - 1; i >= 0; i--)); do eval "${cleanup[i]}"; done' EXIT
cat >"$wrapper/flake.nix" <<WRAPPER
{
  inputs.etcdx.url = "git+file://$PWD";
  inputs.etcdx.inputs.nixpkgs.follows = "nixpkgs";
  inputs.nixpkgs.url = "$standin";
  outputs = { self, etcdx, nixpkgs }: { inherit (etcdx) packages checks; };
}
WRAPPER
w="path:$wrapper"
pkg() { echo "$w#packages.$system.$1"; }

step "build: default, etcd, etcdctl, etcdutl, discovery, upgradelab, the images and the older levels (vendor tree checked against nix/vendor-hash)"
build_all() {
	nix build --no-write-lock-file --no-link "$(pkg default)" "$(pkg etcd)" "$(pkg etcdctl)" "$(pkg etcdutl)" "$(pkg discovery)" "$(pkg upgradelab)" \
		"$(pkg etcd-image)" "$(pkg discovery-image)" "$(pkg level36)" "$(pkg level35)"
}
# A builder killed by a signal is retried after a pause, with what might explain it; a real
# failure (a stale vendor hash, a broken build) fails every try. (The stand-in's holdOutput
# answers the known cause, NixOS/nix#2176; the retry stays for anything else that kills.)
for try in 1 2 3; do
	if out=$(build_all 2>&1); then
		printf '%s\n' "$out" >&2
		break
	fi
	printf '%s\n' "$out" >&2
	if [ "$try" = 3 ] || ! grep -q "failed due to signal" <<<"$out"; then
		exit 1
	fi
	echo "nix-check: a builder was killed by a signal (try $try); processes of build users and the kernel log's tail:" >&2
	ps -o pid,user,etime,cmd -g nixbld 2>/dev/null | head -20 >&2 || true
	dmesg 2>/dev/null | tail -5 >&2 || true
	sleep 10
done
outpath() { nix eval --no-write-lock-file --raw "$(pkg "$1").outPath"; }
default=$(outpath default) etcd=$(outpath etcd) etcdctl=$(outpath etcdctl) etcdutl=$(outpath etcdutl)
discovery=$(outpath discovery) upgradelab=$(outpath upgradelab) image=$(outpath etcd-image) dimage=$(outpath discovery-image)
ls -l "$default/bin"

step "binaries: static, etcd $etcdversion, stamped release $version at $revision"
for b in "$etcd/bin/etcd" "$etcdctl/bin/etcdctl" "$etcdutl/bin/etcdutl" "$discovery/bin/discovery" "$upgradelab/bin/upgradelab"; do
	go version -m "$b" | grep 'CGO_ENABLED=0' >/dev/null || { echo "nix-check: $b was built with cgo" >&2; exit 1; }
done
"$etcd/bin/etcd" --version
"$etcd/bin/etcd" --version | grep "^etcd Version: $etcdversion$" >/dev/null || { echo "nix-check: etcd does not report $etcdversion" >&2; exit 1; }
"$etcd/bin/etcd" --version | grep "^Implementation: etcdx $version (git $revision)$" >/dev/null || { echo "nix-check: etcd is not stamped release $version" >&2; exit 1; }
"$etcd/bin/etcd" --version | grep "Git SHA: $revision" >/dev/null || { echo "nix-check: etcd is not stamped with revision $revision" >&2; exit 1; }
"$etcdctl/bin/etcdctl" version | grep "etcdctl version: $etcdversion" >/dev/null
"$etcdutl/bin/etcdutl" version | grep "etcdutl version: $etcdversion" >/dev/null
"$discovery/bin/discovery" version | grep "Implementation: etcdx $version" >/dev/null
"$upgradelab/bin/upgradelab" plans | grep "^upgrade " >/dev/null

step "older levels: level36 and level35 report upstream's release of their line"
for l in 3.6 3.5; do
	out=$(outpath "level${l/./}")
	want=$(sed -n "s/^\t\"$l\": \"\(3\.[0-9]*\.[0-9]*\)\",\$/\1/p" pkg/buildinfo/buildinfo.go)
	[ -n "$want" ] || { echo "nix-check: cannot read level $l's upstream release from pkg/buildinfo" >&2; exit 1; }
	"$out/bin/etcd" --version | grep "^etcd Version: $want$" >/dev/null || { echo "nix-check: level $l's etcd does not report $want" >&2; exit 1; }
	"$out/bin/etcdctl" version | grep "etcdctl version: $want" >/dev/null || { echo "nix-check: level $l's etcdctl does not report $want" >&2; exit 1; }
	"$out/bin/etcdutl" version | grep "etcdutl version: $want" >/dev/null || { echo "nix-check: level $l's etcdutl does not report $want" >&2; exit 1; }
	echo "level $l: etcd, etcdctl and etcdutl report $want"
done

step "nix run .#etcdctl -- version"
shows "etcdctl version: $etcdversion" nix run --no-write-lock-file "$(pkg etcdctl)" -- version

# make test runs the same unit tests with the race detector (make unit) before this; building the
# check repeats them without it for several minutes of CI's 30. It is evaluated here (its
# derivation instantiates) and built only with NIX_CHECK_UNIT=1 (or by `nix flake check`).
if [ "${NIX_CHECK_UNIT:-0}" != 1 ]; then
	step "checks.$system.unit: the flake's unit-test check evaluates (NIX_CHECK_UNIT=1 builds it)"
	nix eval --no-write-lock-file --raw "$w#checks.$system.unit.drvPath" >/dev/null
	echo "the unit-test check evaluates; its tests ran in make unit"
else
step "checks.$system.unit: the unit tests, built as the flake's check"
if ! nix build --no-write-lock-file --no-link "$w#checks.$system.unit"; then
	# Nix shows the build's last lines only: print what failed from the whole log.
	drv=$(nix eval --no-write-lock-file --raw "$w#checks.$system.unit.drvPath")
	echo "nix-check: the unit tests failed; the failures from the build log:" >&2
	command nix log "$drv" 2>/dev/null | grep -E -B3 -A40 -- '^(--- FAIL|FAIL|panic:)|seed [0-9]+ FAILED' | head -300 >&2 || true
	exit 1
fi
echo "unit tests passed inside the Nix build"
fi

step "vendor tree: nix hash path of the fetched tree equals nix/vendor-hash"
modules=$(nix eval --no-write-lock-file --raw "$(pkg default).goModules.outPath")
got=$(nix hash path "$modules")
[ "$got" = "$(cat nix/vendor-hash)" ] || { echo "nix-check: vendor tree hashes to $got, nix/vendor-hash says $(cat nix/vendor-hash)" >&2; exit 1; }
echo "$got"

step "etcd image"
if docker info >/dev/null 2>&1; then
	tag="etcdx/etcd:$version"
	docker load <"$image"
	cleanup+=("docker rmi -f '$tag' >/dev/null 2>&1 || true")
	shows "Git SHA: $revision" docker run --rm "$tag" --version
	docker run --rm --entrypoint /bin/etcdctl "$tag" version | grep "etcdctl version: $etcdversion" >/dev/null
	echo "image $tag loads and runs"

	step "discovery image: a member in the etcd image bootstraps through it"
	dtag="etcdx/discovery:$version" net="nixcheck-$$"
	docker load <"$dimage"
	cleanup+=("docker rmi -f '$dtag' >/dev/null 2>&1 || true")
	docker network create "$net" >/dev/null
	cleanup+=("docker rm -f -v '$net-disc' '$net-m1' >/dev/null 2>&1; docker network rm '$net' >/dev/null 2>&1 || true")
	docker run -d --name "$net-disc" --network "$net" "$dtag" >/dev/null
	token=""
	for _ in $(seq 50); do
		token=$(docker exec "$net-disc" /bin/discovery new --endpoints http://localhost:2379 --size 1 2>/dev/null) && break
		sleep 0.2
	done
	[ -n "$token" ] || { docker logs "$net-disc"; echo "nix-check: the discovery image does not create tokens" >&2; exit 1; }
	docker run -d --name "$net-m1" --network "$net" "$tag" --name m1 \
		--listen-client-urls http://0.0.0.0:2379 --advertise-client-urls "http://$net-m1:2379" \
		--listen-peer-urls http://0.0.0.0:2380 --initial-advertise-peer-urls "http://$net-m1:2380" \
		--discovery-endpoints "http://$net-disc:2379" --discovery-token "$token" >/dev/null
	healthy=""
	for _ in $(seq 100); do
		docker exec "$net-m1" /bin/etcdctl endpoint health >/dev/null 2>&1 && { healthy=1; break; }
		sleep 0.2
	done
	[ -n "$healthy" ] || { docker logs "$net-m1"; echo "nix-check: the member did not bootstrap through discovery" >&2; exit 1; }
	shows "1 of 1 members registered (complete)" docker exec "$net-disc" /bin/discovery status --endpoints http://localhost:2379 --token "$token"
	echo "image $dtag serves discovery; a member of image $tag bootstrapped through it"
else
	echo "no Docker engine here: the images were built ($image, $dimage) but not loaded or run"
fi
echo
echo "nix-check ok"
