#!/usr/bin/env bash
# Walks a local 3-member cluster through the procedures in docs/upgrade.md and docs/downgrade.md,
# printing each command and its output (the docs quote a run of this script):
#   upgrade    3.5 -> 3.6, one member at a time
#   downgrade  3.6 -> 3.5 (validate, enable, wait for storage 3.5, swap binaries)
# Needs bin/ from `make build` and an etcdctl 3.6 ($ETCDCTL, default: etcdctl on PATH).
set -euo pipefail
bin=${BIN:-bin}
ctl=${ETCDCTL:-etcdctl}
run=$(mktemp -d)
cluster="d1=http://127.0.0.1:12380,d2=http://127.0.0.1:22380,d3=http://127.0.0.1:32380"
eps="http://127.0.0.1:12379,http://127.0.0.1:22379,http://127.0.0.1:32379"
declare -A pid
trap 'kill -TERM "${pid[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$run"' EXIT

show() { echo "\$ $*" | sed "s#$bin/#bin/#g; s#$ctl#etcdctl#g; s#$run#/var/lib/etcd-demo#g"; "$@" 2>&1 | sed "s#$run#/var/lib/etcd-demo#g"; echo; }
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

echo "## upgrade 3.5 -> 3.6"
for i in 1 2 3; do start $i "$bin/etcd-last-release"; done
for i in 1 2 3; do healthy $i; done
sleep 2
version 1
status
show "$ctl" --endpoints "$eps" put /demo/written-at-3.5 yes
for i in 1 2 3; do
	echo "# member d$i: stop the 3.5 binary, start 3.6 on the same data dir"
	stop $i
	start $i "$bin/etcd"
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

echo "## downgrade 3.6 -> 3.5"
show "$ctl" --endpoints "$eps" downgrade validate 3.5
show "$ctl" --endpoints "$eps" downgrade enable 3.5
sleep 3
status
echo "# log lines"
logline "lowering the cluster version for the downgrade"
logline "the member is ready to be downgraded"
echo
for i in 1 2 3; do
	echo "# member d$i: stop the 3.6 binary, start 3.5 on the same data dir"
	stop $i
	start $i "$bin/etcd-last-release"
	healthy $i
	sleep 1
done
sleep 3
version 1
status
logline "the cluster has been downgraded"
show "$ctl" --endpoints "$eps" get /demo/written-at-3.5
