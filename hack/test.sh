#!/usr/bin/env bash
# Runs one tier of the tests (see `make help` and docs/development.md):
#   unit         packages outside test/, and test/bench (its tests need no
#                cluster: the table and parsing of the bench), built
#                without the build tag
#                integration: the tests that need no API server. By
#                default the fast tier to run between edits: go test
#                -short, without the race detector, from test binaries
#                kept in .local/test/unit (hack/testrun: only those whose
#                inputs changed are linked again). With UNIT_SHORT empty
#                (make test): in full, with the race detector, by go test;
#                with UNIT_SKIP_INTEGRATION=1 (make test) only the packages
#                the integration tier leaves out, since it runs the
#                untagged tests of its own packages as well.
#   integration  packages whose tests start an API server (pkg/envtest),
#                built with -tags integration (their untagged tests run
#                again there), and the appspec provisioner's module
#   e2e          test/... but test/bench: the local cluster, HA, restarts,
#                upgrades; make test runs it as e2e-main (test/e2e without
#                the hostile corpus) and e2e-rest (the corpus and the other
#                packages)
#   check        only the check below (make lint runs it)
# Test files that need an API server start with //go:build integration,
# so a package may have tests in both tiers: in
# internal/controller/bundledeployment, the table tests run in unit, the
# reconcile tests in integration. Every tier first checks that no test
# binary of the unit tier imports pkg/envtest (an untagged file that
# should be tagged: the fast tier would start an API server), and that
# every package with tagged test files is in the integration tier (else
# those tests would run in no tier).
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

# envtest_pkgs lists the packages outside test/ whose test binaries, built
# with the go build flags given ("-tags integration" or none), import
# pkg/envtest (directly or not): those start an API server.
envtest_pkgs() {
  local deps
  deps=$(go list "$@" -test -f '{{.ImportPath}} {{join .Deps " "}}' ./...)
  echo "$deps" |
    awk -v e="$module/pkg/envtest" '$1 ~ /\.test$/ {for (i = 2; i <= NF; i++) if ($i == e) {print substr($1, 1, length($1) - 5); next}}' |
    { grep -v "^$module/test/" || true; } | sort
}

# tagged_pkgs lists the packages outside test/ that have test files only
# -tags integration builds.
tagged_pkgs() {
  local untagged tagged
  untagged=$(go list -f '{{.ImportPath}} {{.TestGoFiles}} {{.XTestGoFiles}}' ./...)
  tagged=$(go list -tags integration -f '{{.ImportPath}} {{.TestGoFiles}} {{.XTestGoFiles}}' ./...)
  comm -13 <(echo "$untagged" | sort) <(echo "$tagged" | sort) |
    cut -d' ' -f1 | { grep -v "^$module/test/" || true; } | sort
}

# tier_error prints its first arguments as lines of an error and the
# packages of its last, indented, to stderr.
tier_error() {
  local pkgs=${!#}
  printf 'hack/test.sh: %s\n' "${@:1:$#-1}" | sed '2,$s/^hack\/test.sh: //' >&2
  echo "$pkgs" | sed 's/^/  /' >&2
}

# check_tiers fails, naming the packages, when a test would start an API
# server in the unit tier or would run in no tier.
check_tiers() {
  local leaked lost
  leaked=$(envtest_pkgs)
  if [ -n "$leaked" ]; then
    tier_error "the unit tier would start an API server: test files without" \
      "the build tag integration import pkg/envtest in these packages; give the" \
      "files that need it //go:build integration (docs/development.md: The build tag):" "$leaked"
    return 1
  fi
  lost=$(comm -23 <(tagged_pkgs) <(envtest_pkgs -tags integration))
  if [ -n "$lost" ]; then
    tier_error "these packages have test files tagged integration but no" \
      "test of theirs imports pkg/envtest, so the integration tier leaves them" \
      "out and no tier runs those tests; untag them:" "$lost"
    return 1
  fi
}

check_tiers
if [ "$tier" = check ]; then
  exit 0
fi
mkdir -p test-results
tools=.local/test
# Built aside and renamed: make test runs two tiers at once
# (hack/test-all.sh), and a binary one of them runs must not be rewritten.
go build -o $tools/testreport.$$ ./hack/testreport
mv -f $tools/testreport.$$ $tools/testreport
# go test's own vet (a subset of go vet's checks, run on every package it
# tests) is off: make check vets every package once, with and without the
# build tag, before make test runs a tier.
# Every test binary is linked without symbol table and DWARF (-s -w): with
# the race detector that is a third less CPU per link (a tenth of make
# test's CPU was the linker); stack traces and race reports still name
# files and lines.
gotest=(go test -json -vet=off "-ldflags=-s -w")
run=("${gotest[@]}")
case $tier in
unit)
  # Every package outside test/ but those whose test files are all tagged
  # (check_tiers: none of them imports pkg/envtest without the tag).
  all=$( (go list ./... | grep -v "^$module/test/"; echo "$module/test/bench") | sort)
  untagged=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... | sort)
  tagged=$(tagged_pkgs)
  pkgs=$(comm -23 <(echo "$all") <(comm -23 <(echo "$tagged") <(echo "$untagged")))
  if [ "${UNIT_SKIP_INTEGRATION-}" = 1 ]; then
    # make test: the integration tier runs the untagged tests of its
    # packages too (in full, with the race detector), so they are left
    # to it: each test binary is built and run once.
    pkgs=$(comm -23 <(echo "$pkgs") <(envtest_pkgs -tags integration))
  fi
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
  pkgs=$(envtest_pkgs -tags integration)
  # Three test binaries at a time on two cores: some of them mostly wait
  # (internal/localcluster watches its Nodes' heartbeats for 80 s), and
  # with two a waiting one would hold half of the CPU idle.
  flags+=(-tags=integration -p=3)
  ;;
e2e | e2e-main | e2e-rest)
  pkgs=$(go list ./test/... | grep -v "^$module/test/bench$")
  # make test splits the tier in two (hack/test-all.sh): test/e2e without
  # its hostile corpus, then the corpus with the other packages. The
  # suite's TestMain reads RUKPAK_E2E_HOSTILE.
  case $tier in
  e2e-main)
    pkgs=$module/test/e2e
    export RUKPAK_E2E_HOSTILE=skip
    ;;
  e2e-rest) export RUKPAK_E2E_HOSTILE=only ;;
  esac
  # Their parallel tests mostly wait for the cluster: four at a time (the
  # default is GOMAXPROCS, 2 here) overlap test/e2e's parallel phase with
  # TestExamplesStayHealthy's watch.
  flags+=(-parallel=4)
  # The race detector watches only the test binary, and these tests run
  # rukpak as processes of its own: the detector would slow the test
  # binary's registries, git and HTTP servers and check nothing of
  # rukpak. Packages that run the manager in the test binary keep it.
  for p in $pkgs; do
    if ! go list -deps -test "$p" | grep -qx "$module/internal/manager"; then
      NO_RACE_PKGS="${NO_RACE_PKGS:-} ${p#$module/}"
    fi
  done
  ;;
*)
  echo "usage: $0 unit|integration|e2e|e2e-main|e2e-rest|check" >&2
  exit 2
  ;;
esac

norace=$(for p in ${NO_RACE_PKGS:-}; do echo "$module/${p#./}"; done)
race=$(comm -23 <(echo "$pkgs" | sort) <(echo "$norace" | sort))
plain=$(comm -12 <(echo "$pkgs" | sort) <(echo "$norace" | sort))
status=0
# The appspec module's go vet prints no test event: its failure (a module
# that does not build, a go.sum that misses an entry) is recorded here,
# else the tier would pass without having run its tests.
vetfail=$(mktemp)
rm -f "$vetfail"
{
  [ -z "$race" ] || "${gotest[@]}" "${flags[@]}" -race $race || true
  [ -z "$plain" ] || "${run[@]}" "${flags[@]}" $plain || true
  if [ "$tier" = integration ]; then
    if (cd provisioners/appspec && go vet ./...); then
      (cd provisioners/appspec && "${gotest[@]}" "${flags[@]}" -race ./...) || true
    else
      echo "hack/test.sh: go vet failed in provisioners/appspec: its tests did not run"
      touch "$vetfail"
    fi
  fi
} 2>&1 | $tools/testreport -json "test-results/$tier.json" || status=$?
if [ -e "$vetfail" ]; then
  rm -f "$vetfail"
  status=1
fi
exit $status
