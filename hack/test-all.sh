#!/usr/bin/env bash
# Runs every tier of make test (docs/development.md, "Test tiers"):
#
#  1. the unit tier in full (it fails fast and builds most of what the
#     others need);
#  2. at the same time, the integration tier (mostly CPU: race-instrumented
#     test binaries, envtest start-ups) and e2e-main, test/e2e without
#     the hostile corpus (mostly waiting for its cluster). The integration
#     tier runs at nice 10: it takes the CPU e2e-main leaves. At equal
#     priority its API servers and test binaries took the CPU from the
#     local cluster's, and what e2e-main waits for there (CRDs Established,
#     hook Jobs) took up to ten times as long: kube-prometheus-stack's ten
#     CRDs over a minute, near the test's two-minute deadline;
#  3. e2e-rest: the hostile corpus and the other packages of test/. The
#     corpus's canary (another team's drift restored within 2 s while an
#     attack runs) must not compete with the integration tier for the CPU.
#
# On two cores this takes about 18 minutes instead of 24 one tier after
# the other (TEST_TIERS_SERIAL=1: unit, integration, then e2e whole).
# While two tiers run at once, each line is printed as it comes, prefixed
# with its tier; at the end each tier's summary (its failed tests with why,
# its slowest packages) is printed again, whole and unmixed, so that the
# end of a CI log says what failed. Each tier's whole output is in
# test-results/TIER.log, its events in test-results/TIER.json.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-results

UNIT_SHORT= UNIT_SKIP_INTEGRATION=1 hack/test.sh unit || exit 1

if [ "${TEST_TIERS_SERIAL-}" = 1 ]; then
  hack/test.sh integration || exit 1
  exec hack/test.sh e2e
fi

# tier runs hack/test.sh TIER into test-results/TIER.log, printing each
# line with the tier's name, and ends the log with the tier's exit status.
# A second argument is the niceness the tier runs at.
tier() {
  { nice -n "${2:-0}" hack/test.sh "$1" 2>&1; echo "hack/test-all.sh: tier $1 exited $?"; } |
    tee "test-results/$1.log" | sed -u "s/^/[$1] /"
}
tier integration 10 &
integration=$!
tier e2e-main &
e2e=$!
wait $integration $e2e
tier e2e-rest

status=0
for t in integration e2e-main e2e-rest; do
  last=$(tail -n 1 "test-results/$t.log")
  echo
  echo "=== $t: ${last#hack/test-all.sh: }"
  # The summary testreport prints at the end of the tier.
  sed -n '/^\([0-9]* failed:\|[0-9]* packages, \)/,$p' "test-results/$t.log" | grep -v '^hack/test-all.sh: '
  [ "$last" = "hack/test-all.sh: tier $t exited 0" ] || status=1
done
exit $status
