#!/usr/bin/env bash
# Runs every fuzz target for a bounded number of executions, starting from the seed corpora
# committed under each package's testdata/fuzz. A crash fails the run, a hang fails it at -timeout,
# and Go writes the input that caused it into that package's testdata/fuzz for the fix's test.
#
# The budget is a count, not a duration: with a duration, Go 1.26's fuzz coordinator can report
# its own deadline as "context deadline exceeded" and fail a target that found nothing
# (golang/go#75804). Each count is about 10 s of work on a 2-core machine. FUZZTIME (e.g. 60s or
# 500000x) replaces every count for a longer run by hand.
# Minimization is kept short: on inputs of tens of kilobytes (database files) it would take the
# whole budget.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(
  "server ./wal FuzzSegment 6000x"
  "server ./wal FuzzRecordPayloads 100000x"
  "server ./snap FuzzLoad 20000x"
  "server ./v3rpc FuzzRequestChecks 50000x"
  "server ./httpapi FuzzGatewayBody 40000x"
  "etcdutl ./offline FuzzGetStatus 5000x"
)
for t in "${targets[@]}"; do
  read -r mod pkg name budget <<<"$t"
  budget=${FUZZTIME:-$budget}
  echo "== fuzz $mod/$pkg $name for $budget"
  (cd "$mod" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$budget" -fuzzminimizetime 1s -timeout 5m "$pkg" 2>&1 | grep -v '^fuzz: elapsed' || { echo "fuzz $name failed"; exit 1; })
done
