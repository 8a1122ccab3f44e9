#!/usr/bin/env bash
# Walks a local 3-member cluster through the procedures in docs/upgrade.md and docs/downgrade.md,
# printing each command and its output (the docs quote runs of this script):
#   upgrade    FROM -> TO, one member at a time
#   downgrade  TO -> FROM (validate, enable, wait for the storage to follow, swap binaries)
# FROM and TO are levels (default 3.5 and 3.6). Each member's binary at each level is ours from
# bin/ (`make build`), or, in OLD_BINS and NEW_BINS (three paths each), any etcd binaries: the
# docs' 3.6 -> 3.7 run mixes upstream's and ours. ETCDCTL is the etcdctl (default bin/etcdctl).
set -euo pipefail
bin=${BIN:-bin}
ctl=${ETCDCTL:-$bin/etcdctl}
from=${FROM:-3.5}
to=${TO:-3.6}
ours() { # the binary make build leaves for a level
	case $1 in
	3.7) echo "$bin/etcd" ;;
	3.6) echo "$bin/etcd-last-release" ;;
	*) echo "$bin/etcd-$1" ;;
	esac
}
read -r -a old <<<"${OLD_BINS:-$(ours "$from") $(ours "$from") $(ours "$from")}"
read -r -a new <<<"${NEW_BINS:-$(ours "$to") $(ours "$to") $(ours "$to")}"
name() { "$1" --version | head -1 | sed 's/etcd Version: //' | { read -r v; if "$1" --version | grep -q '^Implementation: etcdx'; then echo "etcdx $v"; else echo "upstream $v"; fi; }; }
run=$(mktemp -d)
cluster="d1=http://127.0.0.1:12380,d2=http://127.0.0.1:22380,d3=http://127.0.0.1:32380"
eps="http://127.0.0.1:12379,http://127.0.0.1:22379,http://127.0.0.1:32379"
declare -A pid
trap 'kill -TERM "${pid[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$run"' EXIT

show() { echo "\$ $*" | sed "s#$ctl#etcdctl#g; s#$bin/#bin/#g; s#$run#/var/lib/etcd-demo#g"; "$@" 2>&1 | sed "s#$run#/var/lib/etcd-demo#g"; echo; }
start() { # start <i> <binary>
	"$2" --name "d$1" --data-dir "$run/d$1" \
		--listen-client-urls "http://127.0.0.1:${1}2379" --advertise-client-urls "http://127.0.0.1:${1}2379" \
		--listen-peer-urls "http://127.0.0.1:${1}2380" --initial-advertise-peer-urls "http://127.0.0.1:${1}2380" \
		--initial-cluster "$cluster" --initial-cluster-token demo 2>>"$run/d$1.log" &
	pid[$1]=$!
}
healthy() { until curl -sf "http://127.0.0.1:${1}2379/health" >/dev/null; do sleep 0.2; done; }
stop() { kill -TERM "${pid[$1]}"; wait "${pid[$1]}" || true; }
logline() { grep -h "$1" "$run"/d*.log | head -1 | cut -c1-220; }
status() { show "$ctl" --endpoints "$eps" endpoint status -w table; }
version() { show curl -s "http://127.0.0.1:${1}2379/version"; }

echo "## upgrade $from -> $to"
for i in 1 2 3; do start $i "${old[$((i - 1))]}"; done
for i in 1 2 3; do healthy $i; done
sleep 2
version 1
status
show "$ctl" --endpoints "$eps" put "/demo/written-at-$from" yes
for i in 1 2 3; do
	echo "# member d$i: stop $(name "${old[$((i - 1))]}"), start $(name "${new[$((i - 1))]}") on the same data dir"
	stop $i
	start $i "${new[$((i - 1))]}"
	healthy $i
	sleep 2
	version $i
done
sleep 2
status
echo "# log lines"
logline '"updated cluster version"'
logline "migrated storage version"
logline "is lower than the local etcd version"
logline "is not up-to-date"
echo

echo "## downgrade $to -> $from"
show "$ctl" --endpoints "$eps" downgrade validate "$from"
show "$ctl" --endpoints "$eps" downgrade enable "$from"
sleep 3
status
echo "# log lines"
logline "lowering the cluster version for the downgrade"
logline "the member is ready to be downgraded"
echo
for i in 1 2 3; do
	echo "# member d$i: stop $(name "${new[$((i - 1))]}"), start $(name "${old[$((i - 1))]}") on the same data dir"
	stop $i
	start $i "${old[$((i - 1))]}"
	healthy $i
	sleep 1
done
sleep 3
version 1
status
logline "the cluster has been downgraded"
show "$ctl" --endpoints "$eps" get "/demo/written-at-$from"
