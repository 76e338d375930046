#!/usr/bin/env bash
# Runs one tier of the tests (see `make help` and README.md):
#   unit         packages whose tests need no API server. By default the
#                fast tier to run between edits: go test -short, without
#                the race detector, from test binaries kept in
#                .local/test/unit (hack/testrun: only those whose inputs
#                changed are linked again). With UNIT_SHORT empty (make
#                test): in full, with the race detector, by go test.
#   integration  packages whose tests start an API server (pkg/envtest),
#                and the appspec provisioner's module
#   e2e          test/...: the local cluster, HA, restarts, upgrades
# Packages of NO_RACE_PKGS run without the race detector, every other one
# with it. Each tier writes the events of `go test -json` to
# test-results/TIER.json and prints a line per package, the output of
# failing tests and the time each package took (hack/testreport).
# What it builds for itself is under .local/test, not bin/: bin/ may be
# shared by several worktrees (for the control-plane binaries), and each
# worktree's test binaries and tools must be its own.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=$1
flags=(${GO_TEST_FLAGS:--count=1 -timeout=60m})
module=github.com/rukpak/rukpak
mkdir -p test-results
tools=.local/test
go build -o $tools/testreport ./hack/testreport
run=(go test -json)

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
    # Linking the test binaries was most of its CPU time (most hold
    # client-go, many Helm and kustomize too). They are built as the
    # release is, statically without cgo (with cgo, the package plugin
    # that kustomize imports has the external linker export every
    # symbol), and without symbol tables and DWARF: half the CPU time.
    # hack/testrun keeps them in $tools/unit and links again only those
    # whose code changed (go test links every one at every run); it takes
    # GO_TEST_FLAGS as -flag=value.
    flags=("-ldflags=-s -w" "${flags[@]}" -short)
    export CGO_ENABLED=0
    NO_RACE_PKGS=$(echo "$pkgs" | sed "s|^$module/|./|")
    go build -o $tools/testrun ./hack/testrun
    run=($tools/testrun -dir $tools/unit --)
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
  [ -z "$plain" ] || "${run[@]}" "${flags[@]}" $plain || true
  if [ "$tier" = integration ]; then
    (cd provisioners/appspec && go vet ./... && go test -json "${flags[@]}" -race ./...) || true
  fi
} 2>&1 | $tools/testreport -json "test-results/$tier.json" || status=$?
exit $status
