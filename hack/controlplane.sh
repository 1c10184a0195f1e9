#!/usr/bin/env bash
# Builds the local control plane from Go modules (no binary downloads): kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl, etcd, etcdctl, kwok, and the kubelet and
# NetworkPolicy controller of the real node (internal/controlplane/realnode.go).
# Binaries land in a cache directory outside the repository, keyed by the pinned versions, and are
# built once. Prints that directory (usable as KUBEBUILDER_ASSETS) on stdout; progress on stderr.
#
#   hack/controlplane.sh          build when missing, print the directory
#   hack/controlplane.sh --dir    print the directory only (no build)
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.37.1}   # the module proxy refuses k8s.io/kubernetes v1.37.2
ETCD_VERSION=${ETCD_VERSION:-3.7.3}
KWOK_VERSION=${KWOK_VERSION:-0.8.0}
K8S_BINS="kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet"
CACHE=${SLIPWAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/slipway}
OUT=$CACHE/controlplane/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION
STAMP=$OUT/.complete

if [[ ${1:-} == --dir ]]; then echo "$OUT"; exit 0; fi
# The real node's NetworkPolicy controller is the project's own small command (a module of its
# own in hack/networkpolicy): rebuilt when its sources change.
NETPOL_SRC=$(cd "$(dirname "$0")/networkpolicy" && pwd)
NETPOL_SUM=$(cat "$NETPOL_SRC"/go.mod "$NETPOL_SRC"/go.sum "$NETPOL_SRC"/*.go | sha256sum | cut -c1-16)
netpol_fresh() { [[ -x $OUT/networkpolicy && $(cat "$OUT/networkpolicy.sum" 2>/dev/null) == "$NETPOL_SUM" ]]; }
# The kubelet and the NetworkPolicy controller came later than the rest: a cache completed before
# them builds only what it lacks.
if [[ -f $STAMP && -x $OUT/kubelet ]] && netpol_fresh; then echo "$OUT"; exit 0; fi

mkdir -p "$OUT"
WORK=$(mktemp -d)
# The background build (below) has ended on every path but a failure; `|| true`: under set -e a
# failing kill would end the trap early and turn a good build's exit status into 1.
trap 'kill "${OTHERS:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
START=$SECONDS
log() { echo "[controlplane] $(date +%T) (+$((SECONDS - START))s) $*" >&2; }
quiet() { local f; f=$(mktemp -p "$WORK"); "$@" >"$f" 2>&1 || { cat "$f" >&2; return 1; }; }
built() { [[ -x $OUT/$1 ]]; }

log "building into $OUT (a cold build takes about 8 minutes on 2 cores)"

# etcd and kwok build beside the Kubernetes binaries (their own modules, few shared packages):
# they fill the cores while the big build links.
others() {
  # etcd in its own module so its dependencies do not perturb Kubernetes'.
  mkdir -p "$WORK/etcd" && cd "$WORK/etcd"
  printf 'module local/etcdbin\n\ngo 1.26.0\n' >go.mod
  if ! built etcd || ! built etcdctl; then
    quiet go get -tool "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" "go.etcd.io/etcd/etcdctl/v3@v$ETCD_VERSION"
    log "building etcd v$ETCD_VERSION"
    go build -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3
    go build -trimpath -ldflags "-s -w" -o "$OUT/etcdctl.tmp" go.etcd.io/etcd/etcdctl/v3
    mv "$OUT/etcd.tmp" "$OUT/etcd"
    mv "$OUT/etcdctl.tmp" "$OUT/etcdctl"
  fi

  # kwok; its stage configs are the project's own (internal/controlplane/kwok-stages.yaml).
  mkdir -p "$WORK/kwok" && cd "$WORK/kwok"
  printf 'module local/kwokbin\n\ngo 1.26.0\n' >go.mod
  quiet go get -tool "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
  if ! built kwok; then
    log "building kwok v$KWOK_VERSION"
    go build -trimpath -ldflags "-s -w" -o "$OUT/kwok.tmp" sigs.k8s.io/kwok/cmd/kwok
    mv "$OUT/kwok.tmp" "$OUT/kwok"
  fi

  # The real node's NetworkPolicy controller (SIG Network's kube-network-policies).
  if ! netpol_fresh; then
    log "building the NetworkPolicy controller (hack/networkpolicy)"
    (cd "$NETPOL_SRC" && go build -trimpath -ldflags "-s -w" -o "$OUT/networkpolicy.tmp" .)
    mv "$OUT/networkpolicy.tmp" "$OUT/networkpolicy"
    echo "$NETPOL_SUM" >"$OUT/networkpolicy.sum"
  fi
}
others &
OTHERS=$!

# kube-* from k8s.io/kubernetes: a throwaway module that pins every staging module to v0.<minor>.<patch>.
STAGING=0.${K8S_VERSION#1.}
mkdir -p "$WORK/k8s" && cd "$WORK/k8s"
printf 'module local/k8sbins\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes v%s\n' "$K8S_VERSION" >go.mod
log "resolving k8s.io/kubernetes v$K8S_VERSION"
KMOD=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
awk '/^replace \(/{f=1;next} f&&/^\)/{f=0} f&&$2=="=>"{print $1}' "$KMOD" |
  while read -r m; do echo "replace $m => $m v$STAGING" >>go.mod; done
# Pin the version on every path, or go get resolves the newest k8s.io/kubernetes.
quiet go get -tool $(for b in $K8S_BINS; do echo "k8s.io/kubernetes/cmd/$b@v$K8S_VERSION"; done)
grep -q "k8s.io/kubernetes v$K8S_VERSION" go.mod || { log "go get moved k8s.io/kubernetes off v$K8S_VERSION"; exit 1; }
MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
LD="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LD="$LD -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$MINOR -X $p.gitTreeState=clean"
done
# One go build for every missing binary: the packages they share (most of the kubelet's are the
# apiserver's) compile once in one action graph, and each link runs while other packages compile,
# instead of five builds one after the other with their links on one core.
MISSING=()
for b in $K8S_BINS; do
  if built "$b"; then log "$b already built"; else MISSING+=("$b"); fi
done
if ((${#MISSING[@]})); then
  log "building ${MISSING[*]} v$K8S_VERSION"
  mkdir -p "$WORK/bin"
  go build -trimpath -ldflags "$LD" -o "$WORK/bin/" $(for b in "${MISSING[@]}"; do echo "k8s.io/kubernetes/cmd/$b"; done)
  for b in "${MISSING[@]}"; do mv "$WORK/bin/$b" "$OUT/$b.tmp" && mv "$OUT/$b.tmp" "$OUT/$b"; done
fi

wait "$OTHERS" || { log "building etcd or kwok failed"; exit 1; }

log "done: $("$OUT/kube-apiserver" --version), etcd $("$OUT/etcd" --version | head -1 | awk '{print $3}'), kwok $KWOK_VERSION"
touch "$STAMP"
echo "$OUT"
