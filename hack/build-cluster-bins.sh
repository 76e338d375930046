#!/usr/bin/env bash
# build-cluster-bins.sh builds the local control-plane binaries from their Go
# modules into bin/cluster (git-ignored): etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl and kwok, plus the kwok
# stage configuration. A binary that already exists is not rebuilt, so later
# runs are instant. No container runtime and no download other than the Go
# module proxy is needed.
#
# Usage: hack/build-cluster-bins.sh [OUT_DIR]
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-${root}/bin/cluster}"
mkdir -p "${out}"
out="$(cd "${out}" && pwd)"
work="${root}/bin/.build"
mkdir -p "${work}"

log() { echo "[build-cluster-bins] $*" >&2; }

# One build at a time per output directory (parallel test packages may all
# find the binaries missing); the others wait and then find them built.
exec 9>"${work}/lock"
flock 9

# copy_module downloads module@version and copies it to a writable directory,
# printing that directory.
copy_module() {
  local mod="$1" ver="$2" dst="$3"
  if [[ ! -f "${dst}/.copied" ]]; then
    local dir
    dir="$(GOFLAGS= go mod download -json "${mod}@${ver}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [[ -n "${dir}" ]] || { log "could not download ${mod}@${ver}"; exit 1; }
    rm -rf "${dst}"
    cp -r "${dir}" "${dst}"
    chmod -R u+w "${dst}"
    touch "${dst}/.copied"
  fi
}

need() { [[ ! -x "${out}/$1" ]]; }

# --- Kubernetes components -------------------------------------------------
kube_bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
missing=()
for b in "${kube_bins[@]}"; do need "$b" && missing+=("$b"); done
if ((${#missing[@]})); then
  src="${work}/kubernetes-${KUBE_VERSION}"
  copy_module k8s.io/kubernetes "${KUBE_VERSION}" "${src}"
  staging_ver="v0.${KUBE_VERSION#v1.}"
  (
    cd "${src}"
    rm -f go.work go.work.sum
    # Point the staging replaces at the published staging modules.
    sed -i -E "s#(k8s.io/[A-Za-z0-9_.-]+) => ./staging/src/k8s.io/[A-Za-z0-9_.-]+#\1 => \1 ${staging_ver}#" go.mod
    minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
    ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=${KUBE_VERSION} -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=${minor}"
    for b in "${missing[@]}"; do
      log "building ${b} ${KUBE_VERSION}"
      GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${out}/${b}.tmp" "./cmd/${b}"
      mv "${out}/${b}.tmp" "${out}/${b}"
    done
  )
fi

# --- etcd ------------------------------------------------------------------
if need etcd; then
  src="${work}/etcd-server-${ETCD_VERSION}"
  copy_module go.etcd.io/etcd/server/v3 "${ETCD_VERSION}" "${src}"
  (
    cd "${src}"
    # The module's go.mod replaces sibling modules with ../ paths that the
    # module zip does not contain; use the published ones instead.
    sed -i -E "/=> \.\.\//d" go.mod
    log "building etcd ${ETCD_VERSION}"
    GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${out}/etcd.tmp" .
    mv "${out}/etcd.tmp" "${out}/etcd"
  )
fi

# --- kwok ------------------------------------------------------------------
if need kwok; then
  log "building kwok ${KWOK_VERSION}"
  gobin="$(mktemp -d "${work}/gobin.XXXXXX")"
  GOBIN="${gobin}" GOFLAGS= CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
  mv "${gobin}/kwok" "${out}/kwok"
  rmdir "${gobin}"
fi
# The stage configuration is kwok's own stock stages, concatenated: node
# initialisation and the node heartbeat (with the node lease kwok renews when
# started with --node-lease-duration-seconds; without a heartbeat the node
# controller marks the node NotReady after about 50 s and every pod loses
# Ready for good), and the fast pod life cycle. It is generated on every run
# and replaces the file only when it differs, so a bin/cluster made by an
# older version of this script is brought up to date.
stages_dir="$(GOFLAGS= go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -n "${stages_dir}" ]] || { log "could not download sigs.k8s.io/kwok@${KWOK_VERSION}"; exit 1; }
stages="${out}/kwok-stages.yaml"
: > "${stages}.tmp"
for f in "${stages_dir}"/kustomize/stage/node/fast/*.yaml \
         "${stages_dir}"/kustomize/stage/node/heartbeat-with-lease/*.yaml \
         "${stages_dir}"/kustomize/stage/pod/fast/*.yaml; do
  [[ "$(basename "$f")" == kustomization.yaml ]] && continue
  echo "---" >> "${stages}.tmp"
  cat "$f" >> "${stages}.tmp"
done
if cmp -s "${stages}.tmp" "${stages}"; then
  rm "${stages}.tmp"
else
  log "writing ${stages} (kwok ${KWOK_VERSION} stages: node, node heartbeat with lease, pod)"
  mv "${stages}.tmp" "${stages}"
fi

log "binaries ready in ${out}"
