#!/usr/bin/env bash
# Start the local control plane with rukpak (bin/rukpakctl local up), install
# every manifest in examples/, wait until the BundleDeployments are Installed,
# their Deployments Available and then the BundleDeployments Ready, and print
# how to look around. The cluster stays up; stop it with
# `bin/rukpakctl local down`.
#
# Called by `make run` after `make build cluster-bins`. Environment:
#   RUKPAK_STATE_DIR  state directory of the cluster (default .local/cluster)
#   RUN_TIMEOUT       kubectl wait timeout (default 120s)
#   UP_FLAGS          extra flags for `rukpakctl local up` (e.g. --manager=PATH)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rukpakctl=$root/bin/rukpakctl
kubectl=$root/bin/cluster/kubectl
timeout=${RUN_TIMEOUT:-120s}
cd "$root"

for f in "$rukpakctl" "$kubectl"; do
	[[ -x $f ]] || { echo "run.sh: $f is missing; run \`make build cluster-bins\`" >&2; exit 1; }
done

# `local up` prints "export KUBECONFIG=..." last, on stdout.
# shellcheck disable=SC2086 # UP_FLAGS is a list of flags
env_line=$("$rukpakctl" local up ${UP_FLAGS:-})
eval "$env_line"
export KUBECONFIG

state_dir=$(dirname "$KUBECONFIG")

# diagnose prints what helps when a wait fails, then exits non-zero.
diagnose() {
	echo >&2
	echo "run.sh: $1; the cluster is still up for a look." >&2
	"$kubectl" get bd -o wide >&2 || true
	"$kubectl" get bd -o jsonpath='{range .items[*]}{.metadata.name}:{"\n"}{range .status.conditions[*]}  {.type}={.status} {.reason}: {.message}{"\n"}{end}{end}' >&2 || true
	echo "--- last lines of $state_dir/logs/rukpak.log" >&2
	tail -n 30 "$state_dir/logs/rukpak.log" >&2 || true
	exit 1
}

echo "applying examples/"
"$kubectl" apply -f "$root/examples/"

echo "waiting for the BundleDeployments to be Installed (up to $timeout)"
"$kubectl" wait --for=condition=Installed bd --all --timeout="$timeout" ||
	diagnose "BundleDeployments did not become Installed"

namespaces=$("$kubectl" get bd -o jsonpath='{range .items[*]}{.spec.installNamespace}{"\n"}{end}' | sort -u)
for ns in $namespaces; do
	if [[ -n $("$kubectl" get deploy -n "$ns" -o name) ]]; then
		echo "waiting for the Deployments in namespace $ns to be Available"
		"$kubectl" wait --for=condition=Available deploy --all -n "$ns" --timeout="$timeout" ||
			diagnose "Deployments in $ns did not become Available"
	fi
done

# A BundleDeployment reports Ready (Installed, Healthy and settled) on the
# reconcile after its Deployments became Available, not at the same
# instant: wait for it, or the table below shows READY False for what was
# just waited on.
echo "waiting for the BundleDeployments to be Ready"
"$kubectl" wait --for=condition=Ready bd --all --timeout="$timeout" ||
	diagnose "BundleDeployments did not become Ready"

echo
echo "Installed:"
"$kubectl" get bd
for ns in $namespaces; do
	echo
	echo "namespace $ns:"
	"$kubectl" get deploy,pods,svc,cm -n "$ns" 2>/dev/null
done

# Show paths relative to the repository when they are inside it.
rel() { case $1 in "$root"/*) echo "${1#"$root"/}" ;; *) echo "$1" ;; esac; }
cat <<MSG

The local cluster is up (logs in $(rel "$state_dir")/logs). To look around:

  export KUBECONFIG=$KUBECONFIG
  export PATH=$root/bin/cluster:\$PATH   # kubectl
  kubectl get bd                      # BundleDeployments: class, active bundle, Installed
  kubectl get bundles                 # their immutable revisions
$(for ns in $namespaces; do echo "  kubectl get deploy,svc,cm -n $ns"; done)
  $(rel "$rukpakctl") local down            # stop everything
MSG
