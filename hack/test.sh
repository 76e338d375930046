#!/usr/bin/env bash
# Runs one tier of the tests (see `make help`):
#   unit         packages whose tests need no API server (go test -short,
#                without the race detector, unless UNIT_SHORT is empty: the
#                fast tier to run between edits; `make test` runs them in
#                full, with it)
#   integration  packages whose tests start an API server (pkg/envtest),
#                and the appspec provisioner's module
#   e2e          test/...: the local cluster, HA, restarts, upgrades
# Packages of NO_RACE_PKGS run without the race detector, every other one
# with it. Each tier writes the events of `go test -json` to
# test-results/TIER.json and ends with the time each package took.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=$1
flags=(${GO_TEST_FLAGS:--count=1 -timeout=60m})
module=github.com/rukpak/rukpak
mkdir -p test-results
go build -o bin/testreport ./hack/testreport

# Packages whose tests import pkg/envtest start an API server.
envtest_pkgs() {
  go list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
    awk -v e="$module/pkg/envtest" '{for (i = 2; i <= NF; i++) if ($i == e) {print $1; next}}'
}

case $tier in
unit)
  pkgs=$(comm -23 <(go list ./... | grep -v "^$module/test/" | sort) <(envtest_pkgs | sort))
  if [ "${UNIT_SHORT-1}" = 1 ]; then
    # The fast tier: -short, and without the race detector (which makes
    # these tests 5 to 10 times slower); make test runs them in full.
    flags+=(-short)
    NO_RACE_PKGS=$(echo "$pkgs" | sed "s|^$module/|./|")
  fi
  ;;
integration)
  pkgs=$(envtest_pkgs | grep -v "^$module/test/")
  ;;
e2e)
  pkgs=$(go list ./test/...)
  ;;
*)
  echo "usage: $0 unit|integration|e2e" >&2
  exit 2
  ;;
esac

norace=$(for p in ${NO_RACE_PKGS:-}; do echo "$module/${p#./}"; done)
race=$(comm -23 <(echo "$pkgs" | sort) <(echo "$norace" | sort))
plain=$(comm -12 <(echo "$pkgs" | sort) <(echo "$norace" | sort))
status=0
{
  [ -z "$race" ] || go test -json "${flags[@]}" -race $race || true
  [ -z "$plain" ] || go test -json "${flags[@]}" $plain || true
  if [ "$tier" = integration ]; then
    (cd provisioners/appspec && go vet ./... && go test -json "${flags[@]}" -race ./...) || true
  fi
} 2>&1 | bin/testreport -json "test-results/$tier.json" || status=$?
exit $status
