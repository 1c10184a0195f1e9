#!/usr/bin/env bash
# The Debian packages slipway needs besides Go, in one list, installed only when missing.
#
#   hack/deps.sh                  install every missing package (apt-get; through sudo when not root)
#   hack/deps.sh NEED             install the missing packages NEED needs, saying which; nothing
#                                 printed when none is missing (NEED: test, dev or ci)
#   hack/deps.sh --check [NEED]   only check: exit 1 with the command to run when a package NEED
#                                 needs is missing (default: every package)
#
# `make deps` and .ci/run run the first, `make test` and `make dev` the second (hack/deps.sh test,
# hack/deps.sh dev). With nothing missing each takes some 20 ms.
set -euo pipefail

# One line per package: the Debian package, what shows it is installed (a command in PATH or in
# /usr/bin, /usr/sbin; or a path glob), and what needs it. A new dependency is one more line.
# setpriv starts etcd and kube-apiserver with a parent-death signal (internal/controlplane).
# ca-certificates: the CA bundle make image and make dev put into the images (hack/image --ca-bundle,
# internal/devimage).
# nodejs, npm: build and test the manager's web UI (web/; make ui, run by test, dev and build).
# chromium: the browser the web UI's tests drive headless (internal/manager/ui/browsertest).
# zsh, fish: the shells the slipway CLI's completion scripts are loaded into by its tests.
# prometheus: the real Prometheus server the analysis tests start and query
# (internal/manager/analysis/promtest).
# containerd, runc, containernetworking-plugins, busybox-static, iptables, iproute2, nftables: the
# real node (internal/controlplane/realnode.go): its container runtime, its pods' bridge network, the
# static busybox its images are built from (the package, not busybox's dynamically linked one), and
# the nft tool that removes a NetworkPolicy table a crashed node left.
# SLIPWAY_DEPS_PACKAGES replaces the list (the script's own tests use it).
PACKAGES=${SLIPWAY_DEPS_PACKAGES:-'
git              git                 test dev ci
make             make                ci
util-linux       setpriv             test dev ci
docker-registry  docker-registry     test ci
postgresql       /usr/lib/postgresql/*/bin/initdb test ci
ca-certificates  /etc/ssl/certs/ca-certificates.crt test dev ci
nodejs           node                test dev ci
npm              npm                 test dev ci
chromium         chromium            test dev ci
zsh              zsh                 test ci
fish             fish                test ci
prometheus       prometheus          test ci
containerd       containerd          test dev ci
runc             runc                test dev ci
containernetworking-plugins /usr/lib/cni/bridge test dev ci
busybox-static   /usr/share/doc/busybox-static test dev ci
iptables         iptables            test dev ci
iproute2         ip                  test dev ci
nftables         nft                 test dev ci
'}

usage() {
  sed -n '2,11s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

# installed PROBE: whether the file PROBE names exists.
installed() {
  local probe=$1
  if [[ $probe == */* ]]; then
    compgen -G "$probe" >/dev/null
  else
    command -v "$probe" >/dev/null 2>&1 || [[ -x /usr/bin/$probe || -x /usr/sbin/$probe ]]
  fi
}

# missing NEED: the packages NEED needs ("" for all) that are not installed, one a line.
missing() {
  local need=$1 pkg probe needs
  while read -r pkg probe needs; do
    [[ -n $pkg ]] || continue
    [[ -z $need || " $needs " == *" $need "* ]] || continue
    installed "$probe" || echo "$pkg"
  done <<<"$PACKAGES"
}

apt_command() {
  local sudo=""
  ((EUID == 0)) || sudo="sudo "
  echo "${sudo}apt-get update && ${sudo}apt-get install -y $*"
}

valid_need() {
  case $1 in "" | test | dev | ci) ;; *) echo "deps.sh: unknown need '$1' (test, dev or ci)" >&2; exit 2 ;; esac
}

check() {
  local need=${1:-}
  valid_need "$need"
  local -a pkgs
  mapfile -t pkgs < <(missing "$need")
  ((${#pkgs[@]} == 0)) && return 0
  {
    echo "missing Debian package(s)${need:+ for make $need}: ${pkgs[*]}"
    echo "install them with:  make deps"
    echo "          (that is: $(apt_command "${pkgs[*]}"))"
  } >&2
  exit 1
}

# install [NEED]: install the missing packages NEED needs ("" for all). Without NEED it also says
# when nothing is missing; with one (make test, make dev) it is silent then.
install() {
  local need=${1:-}
  valid_need "$need"
  local -a pkgs
  mapfile -t pkgs < <(missing "$need")
  if ((${#pkgs[@]} == 0)); then
    [[ -n $need ]] || echo "==> Debian packages: all installed"
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps.sh: apt-get not found; install these packages with your system's package manager: ${pkgs[*]}" >&2
    exit 1
  fi
  local -a sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || { echo "deps.sh: not root and no sudo; run as root: $(apt_command "${pkgs[*]}")" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "==> missing Debian package(s)${need:+ for make $need}: ${pkgs[*]}; installing: ${sudo[*]}${sudo:+ }apt-get install ${pkgs[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
  # What apt-get installed must satisfy the check, or the list's probe is wrong.
  check "$need"
  echo "==> installed ${pkgs[*]}"
}

case ${1:-} in
  "") install ;;
  test | dev | ci) install "$1" ;;
  --check) check "${2:-}" ;;
  -h | --help) usage ;;
  *) echo "deps.sh: unknown argument '$1'" >&2; usage ;;
esac
