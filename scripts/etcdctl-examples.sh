#!/usr/bin/env bash
# Writes docs/etcdctl.md: every etcdctl command with one example run for real against a fresh
# local 3-member cluster of bin/etcd, using bin/etcdctl (both from `make build`).
#   scripts/etcdctl-examples.sh > docs/etcdctl.md      (or: make etcdctl-docs)
set -euo pipefail
bin=$(cd "${BIN:-bin}" && pwd)
run=$(mktemp -d)
ports=(0 13379 23379 33379) # client ports; peer = client+1
cluster="x1=http://127.0.0.1:13380,x2=http://127.0.0.1:23380,x3=http://127.0.0.1:33380"
eps="http://127.0.0.1:13379,http://127.0.0.1:23379,http://127.0.0.1:33379"
pids=()
trap 'kill -TERM "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$run"' EXIT
for i in 1 2 3; do
	"$bin/etcd" --name "x$i" --data-dir "$run/x$i" \
		--listen-client-urls "http://127.0.0.1:${ports[$i]}" --advertise-client-urls "http://127.0.0.1:${ports[$i]}" \
		--listen-peer-urls "http://127.0.0.1:$((ports[i] + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ports[i] + 1))" \
		--initial-cluster "$cluster" --initial-cluster-token examples 2>"$run/x$i.log" &
	pids+=($!)
done
# A second, one-member cluster: the destination of the make-mirror example.
"$bin/etcd" --name y1 --data-dir "$run/y1" \
	--listen-client-urls http://127.0.0.1:43379 --advertise-client-urls http://127.0.0.1:43379 \
	--listen-peer-urls http://127.0.0.1:43380 --initial-advertise-peer-urls http://127.0.0.1:43380 \
	--initial-cluster y1=http://127.0.0.1:43380 2>"$run/y1.log" &
pids+=($!)
for p in "${ports[@]:1}" 43379; do until curl -sf "http://127.0.0.1:$p/health" >/dev/null; do sleep 0.2; done; done

export PATH="$bin:$PATH" ETCDCTL_ENDPOINTS="$eps"
# example <heading> <what it does> <command line as shown> [command to run, default: the same]
example() {
	printf '### %s\n\n%s\n\n```console\n$ %s\n' "$1" "$2" "$3"
	# The client library's JSON warning lines (upstream etcdctl prints them too) are left out.
	(cd "$run" && eval "${4:-$3}") 2>&1 | sed "s#$run#/tmp#g" | grep -v '^{"level":' || true
	printf '```\n\n'
}
section() { printf '## %s\n\n' "$1"; }

cat <<'EOF'
# etcdctl

`etcdctl` is the online command-line client: the same commands, flags, `ETCDCTL_*` environment
variables, output formats, exit statuses and help as upstream etcdctl 3.7 (a cobra command tree,
as upstream's; `bin/levels/3.6/etcdctl` and `bin/levels/3.5/etcdctl` are those lines' etcdctl;
see compatibility.md), so existing runbooks and
scripts work unchanged against our server or upstream's. It is built on
`go.etcd.io/etcd/client/v3`. Every example below is real output, produced by
`scripts/etcdctl-examples.sh` (`make etcdctl-docs`) against a local 3-member cluster of our
server with `ETCDCTL_ENDPOINTS` set to its three client URLs (the client library's JSON warning
lines, which upstream etcdctl prints as well, are left out).

## Global flags

Global flags may appear anywhere on the line. Each can also be set by an environment variable
named `ETCDCTL_` + the flag in upper case with `_` for `-` (`ETCDCTL_ENDPOINTS`,
`ETCDCTL_DIAL_TIMEOUT`, `ETCDCTL_CACERT`, ...); a flag on the command line wins over its
variable. `ETCDCTL_API` is accepted and ignored (v3 is the only API).

| flag | default | meaning |
|---|---|---|
| `--endpoints` | `127.0.0.1:2379` | comma-separated gRPC endpoints (`http://`, `https://` or host:port) |
| `--dial-timeout` | `2s` | timeout for establishing a connection |
| `--command-timeout` | `5s` | timeout for a short command (not watch, lock, elect, keep-alive, snapshot) |
| `--keepalive-time`, `--keepalive-timeout` | `2s`, `6s` | gRPC keepalive of the client connection |
| `--max-request-bytes`, `--max-recv-bytes` | 2 MiB, unlimited | client-side message size limits |
| `--cacert`, `--cert`, `--key` | | TLS: CA bundle, client certificate and key (any of them implies TLS) |
| `--insecure-transport` | `true` | plain text when no TLS flag or `https://` endpoint asks otherwise |
| `--insecure-skip-tls-verify` | `false` | do not verify the server certificate (testing only) |
| `--user`, `--password` | | `name:password`, or `name` with `--password`, or `name` alone to be asked on the terminal |
| `-w`, `--write-out` | `simple` | `simple`, `json`, `table`, `fields` or `protobuf` (each command supports the formats upstream's does) |
| `--hex` | `false` | print keys and values as hex-escaped bytes, IDs in hex |
| `--debug` | `false` | client-side debug logging on stderr |

Exit statuses, as upstream's: 0 success; 1 error (an `Error: ...` line on stderr), also for an
unknown command (with upstream's "Did you mean this?" suggestions) or a malformed flag (the
command's usage follows on stdout); 2 no connection could be made; 3 invalid input (txn, watch -i);
4 output format not supported by the command; 5 watch cancelled by the server; 128 wrong
arguments. `lock <name> <command>` exits with the command's status. As upstream, a command may be
shortened to a prefix that names only it, at every level (`etcdctl compact 5`, `etcdctl mem li`).

Differences from upstream: `check perf` takes `--duration` (upstream always runs 60s);
`watch a b c` is refused (upstream silently ignores extra keys); in `watch -i` a malformed line is
reported and skipped instead of ending the session; `--user` without a password and without a
terminal is an error instead of a failed prompt; `--user name:pass` together with `--password` is
refused (upstream takes `name:pass` as the user name); a malformed `ETCDCTL_*` variable is an
error (upstream ignores it); `make-mirror --rev N` keeps the source prefix mapping to
`--dest-prefix` (or the same prefix), where upstream's drops the prefix from the keys it copies.
`auth`, `user` and `role` are not implemented yet (issue 16).

EOF

section "Keys"
example "put" "Writes a key; the value may come from stdin. \`--prev-kv\` prints the pair it replaced." \
	"etcdctl put greeting hello && etcdctl put greeting 'hello again' --prev-kv"
example "put --lease, --ignore-value, --ignore-lease" "Attach a key to a lease, or rewrite a key keeping its value or lease." \
	"etcdctl put session/a v --lease \$(etcdctl lease grant 600 | cut -d' ' -f2) && etcdctl put session/a --ignore-value && etcdctl get session/a"
example "get" "Reads a key or a range; \`--prefix\`, \`--from-key\`, \`--limit\`, \`--sort-by\`, \`--order\`, \`--rev\`, \`--keys-only\`, \`--print-value-only\`, \`--count-only\`, \`--consistency=s\` as upstream." \
	"etcdctl put fruit/apple 3 >/dev/null; etcdctl put fruit/banana 1 >/dev/null; etcdctl get fruit/ --prefix --sort-by=VALUE"
example "get -w json" "Every output format is upstream's: here the JSON of the range response (keys and values base64)." \
	"etcdctl get fruit/apple -w json"
example "get -w fields" "The \`fields\` format, one \"Name\" : value per line, for scripts." \
	"etcdctl get fruit/ --prefix --count-only -w fields"
example "del" "Deletes a key or a range (\`--prefix\`, \`--from-key\`, \`--prev-kv\`) and prints how many were deleted." \
	"etcdctl del fruit/ --prefix --prev-kv"
example "txn" "A transaction from stdin (or \`-i\` to be prompted): compares, a blank line, the requests on success, a blank line, the requests on failure and a last blank line." \
	"etcdctl txn <<'TXN'
value(\"greeting\") = \"hello again\"

put greeting bonjour
get greeting

put greeting hello

TXN"
example "compaction" "Discards the history before a revision (\`--physical\` waits until it is removed from disk)." \
	"etcdctl compaction --physical \$(etcdctl get greeting -w json | sed 's/.*\"revision\":\([0-9]*\).*/\1/')"

section "Watch"
example "watch" "Prints events as they happen (another shell wrote twice, then Ctrl-C). \`--prefix\`, \`--rev\`, \`--prev-kv\`, \`--progress-notify\`; \`ETCDCTL_WATCH_KEY\` and \`ETCDCTL_WATCH_RANGE_END\` can name the key." \
	"etcdctl watch greeting --prev-kv" \
	"(sleep 1; etcdctl put greeting hi >/dev/null; etcdctl del greeting >/dev/null) & timeout -s INT 3 etcdctl watch greeting --prev-kv; wait"
example "watch -- command" "Runs a command per event with ETCD_WATCH_REVISION, ETCD_WATCH_EVENT_TYPE, ETCD_WATCH_KEY and ETCD_WATCH_VALUE set (quoted as upstream does)." \
	"etcdctl watch config/ --prefix -- sh -c 'echo \"\$ETCD_WATCH_EVENT_TYPE \$ETCD_WATCH_KEY=\$ETCD_WATCH_VALUE at \$ETCD_WATCH_REVISION\"'" \
	"(sleep 1; etcdctl put config/mode fast >/dev/null) & timeout -s INT 3 etcdctl watch config/ --prefix -- sh -c 'echo \"\$ETCD_WATCH_EVENT_TYPE \$ETCD_WATCH_KEY=\$ETCD_WATCH_VALUE at \$ETCD_WATCH_REVISION\"'; wait"
example "watch -i" "Interactive: each \`watch ...\` line starts a watch, \`progress\` asks for a progress notification; the end of input ends the command (exit 3, as upstream)." \
	"etcdctl watch -i" \
	"(printf 'watch config/mode\n'; sleep 1; etcdctl put config/mode slow >/dev/null; sleep 0.5; printf 'progress\n'; sleep 1) | etcdctl watch -i"

section "Leases"
example "lease grant" "Grants a lease with a TTL in seconds." "etcdctl lease grant 60"
example "lease timetolive" "Remaining TTL; \`--keys\` lists the keys attached." \
	"id=\$(etcdctl lease grant 60 | cut -d' ' -f2); etcdctl put job/1 running --lease \$id >/dev/null; etcdctl lease timetolive \$id --keys"
example "lease keep-alive" "Renews a lease until interrupted (\`--once\` renews once and exits)." \
	"etcdctl lease keep-alive --once 694d9ac5f0a1b2c3" \
	"etcdctl lease keep-alive --once \$(etcdctl lease grant 60 | cut -d' ' -f2)"
example "lease list" "Lists the active leases." "etcdctl lease list"
example "lease revoke" "Revokes a lease and deletes its keys." \
	"etcdctl lease revoke \$(etcdctl lease grant 60 | cut -d' ' -f2)"

section "Cluster"
example "member list" "Members, in simple or table form (\`--consistency=s\` reads the local member's view)." "etcdctl member list -w table"
example "member add" "Adds a member (\`--learner\` for a non-voting learner) and prints the settings it must start with." \
	"etcdctl member add x4 --learner --peer-urls=http://127.0.0.1:43380"
example "member update" "Changes a member's peer URLs." \
	"etcdctl member update \$(etcdctl member list | grep 43380 | cut -d, -f1) --peer-urls=http://127.0.0.1:43380"
example "member promote" "Promotes a learner once it has caught up with the leader (here it never started, so the server refuses)." \
	"etcdctl member promote \$(etcdctl member list | grep 43380 | cut -d, -f1)"
example "member remove" "Removes a member." "etcdctl member remove \$(etcdctl member list | grep 43380 | cut -d, -f1)"
example "endpoint health" "Checks each endpoint (\`--cluster\`: every member's client URLs)." "etcdctl endpoint health --cluster -w table"
example "endpoint status" "Version, storage version, database size, leadership, raft indexes and downgrade state per endpoint." \
	"etcdctl endpoint status -w table"
example "endpoint hashkv" "The hash of each member's key-value store (equal hashes at one revision: the members agree)." "etcdctl endpoint hashkv -w table"
example "move-leader" "Transfers leadership to another member." \
	"etcdctl move-leader \$(etcdctl endpoint status | grep -v ', true, false' | head -1 | cut -d, -f2 | tr -d ' ')"

section "Maintenance"
example "defrag" "Defragments the backend of each endpoint (\`--cluster\`: every member)." "etcdctl defrag --cluster"
example "snapshot save" "Streams a consistent backend snapshot from one member to a file (restore it with \`etcdutl snapshot restore\`)." \
	"etcdctl snapshot save /tmp/backup.db --endpoints=http://127.0.0.1:13379"
example "alarm list, alarm disarm" "Active alarms (NOSPACE, CORRUPT); disarm clears them after the cause is fixed. Here: none." \
	"etcdctl alarm list; etcdctl alarm disarm"
example "downgrade" "Validates, enables or cancels a cluster downgrade (see docs/downgrade.md for the procedure)." \
	"etcdctl downgrade validate 3.5 && etcdctl downgrade enable 3.5 && etcdctl downgrade cancel"
example "check perf" "Writes at the load model's rate (\`--load\` s, m, l, xl) and judges throughput and latency; default 60 s." \
	"etcdctl check perf --load s --duration 10s"
example "check datascale" "Writes the load model's key-values (s: 10,000 of 1 KiB) and reports how much the first endpoint's resident memory grew, then deletes them." \
	"etcdctl check datascale --load s --auto-compact --auto-defrag"
example "make-mirror" "Copies a prefix to another cluster (here under a new prefix), then follows every change until interrupted; every 30 s it prints how many changes it copied." \
	"etcdctl make-mirror --prefix conf/ --dest-prefix mirror/conf/ http://127.0.0.1:43379" \
	"etcdctl put conf/a 1 >/dev/null; etcdctl put conf/b 2 >/dev/null; timeout -s INT 3 etcdctl make-mirror --prefix conf/ --dest-prefix mirror/conf/ http://127.0.0.1:43379; echo '$ etcdctl --endpoints http://127.0.0.1:43379 get --prefix mirror/'; etcdctl --endpoints http://127.0.0.1:43379 get --prefix mirror/"

section "Concurrency"
example "lock" "Holds a named lock until interrupted, or runs a command while holding it (ETCD_LOCK_KEY and ETCD_LOCK_REV set; etcdctl exits with the command's status)." \
	"etcdctl lock deploy -- sh -c 'echo \"holding \$ETCD_LOCK_KEY\"'"
example "elect" "Campaigns with a proposal and holds leadership until interrupted; \`-l\` observes the leaders instead." \
	"etcdctl elect scheduler node-a" \
	"timeout -s INT 2 etcdctl elect scheduler node-a"

section "Authentication"
example "user add" "Adds a user: \`name:password\`, \`--new-user-password\`, a prompt (\`--interactive=false\` reads standard input), or \`--no-password\` for a user known only by its client certificate." \
	"etcdctl user add root --new-user-password=rootpw && etcdctl user add alice:alicepw"
example "role add" "Adds a role." "etcdctl role add app"
example "role grant-permission" "Grants read, write or readwrite on a key, a range \`key end\`, a prefix (\`--prefix\`) or every key from one on (\`--from-key\`)." \
	"etcdctl role grant-permission app readwrite /app/ --prefix && etcdctl role grant-permission app read /config"
example "user grant-role" "Grants a role to a user." "etcdctl user grant-role alice app"
example "auth enable" "Turns authentication on; it needs the user root, and gives root the root role when it lacks it." "etcdctl auth enable"
example "auth status" "Whether authentication is on, and the auth revision (it moves with every change to users, roles and permissions)." \
	"etcdctl auth status --user root:rootpw"
example "role get" "A role's permissions." "etcdctl role get app --user root:rootpw"
example "role list" "Every role." "etcdctl role list --user root:rootpw"
example "user get" "A user's roles (\`--detail\`: with their permissions); a user may read itself." "etcdctl user get alice --detail --user alice:alicepw"
example "user list" "Every user." "etcdctl user list --user root:rootpw"
example "user passwd" "Changes a password (asked twice on a terminal; \`--interactive=false\` reads it from standard input)." \
	"echo alicepw2 | etcdctl user passwd alice --interactive=false --user root:rootpw"
example "--user" "Any command runs as a user; outside its permissions it is refused." \
	"etcdctl put /app/greeting hello --user alice:alicepw2 && etcdctl put /other x --user alice:alicepw2" \
	"etcdctl put /app/greeting hello --user alice:alicepw2 && (etcdctl put /other x --user alice:alicepw2 || true)"
example "role revoke-permission" "Takes a permission back (the key and range as granted)." "etcdctl role revoke-permission app /config --user root:rootpw"
example "user revoke-role" "Takes a role from a user." "etcdctl user revoke-role alice app --user root:rootpw"
example "role delete" "Deletes a role (and takes it from its users)." "etcdctl role delete app --user root:rootpw"
example "user delete" "Deletes a user." "etcdctl user delete alice --user root:rootpw"
example "auth disable" "Turns authentication off." "etcdctl auth disable --user root:rootpw"

section "Other"
example "version" "The etcdctl and API versions." "etcdctl version"
example "options" "The global flags, which the help of every command leaves out (from 3.7)." "etcdctl options | head -6"
example "completion" "Shell completion for bash, zsh, fish or PowerShell: cobra's scripts, as upstream's (bash needs the bash-completion package). Load with \`source <(etcdctl completion bash)\`, or install \`etcdctl completion zsh > \"\${fpath[1]}/_etcdctl\"\`." \
	"etcdctl completion bash | head -3"
