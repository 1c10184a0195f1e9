#!/usr/bin/env bash
# The Debian packages slipway needs besides Go, in one list, installed only when missing.
#
#   hack/deps.sh                  install the missing packages (apt-get; through sudo when not root)
#   hack/deps.sh --check [NEED]   only check: exit 1 with the command to run when a package NEED
#                                 needs is missing (NEED: test, dev or ci; default: every package)
#
# `make deps` runs the first, `make test` and `make dev` the second, .ci/run the first.
set -euo pipefail

# One line per package: the Debian package, what shows it is installed (a command in PATH or in
# /usr/bin, /usr/sbin; or a path glob), and what needs it. A new dependency is one more line.
PACKAGES='
git              git                 test dev ci
make             make                ci
docker-registry  docker-registry     test ci
postgresql       /usr/lib/postgresql/*/bin/initdb test ci
'

usage() {
  sed -n '2,8s/^# \{0,1\}//p' "$0" >&2
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

check() {
  local need=${1:-}
  case $need in "" | test | dev | ci) ;; *) echo "deps.sh: unknown need '$need' (test, dev or ci)" >&2; exit 2 ;; esac
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

install() {
  local -a pkgs
  mapfile -t pkgs < <(missing "")
  if ((${#pkgs[@]} == 0)); then
    echo "==> Debian packages: all installed"
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
  echo "==> apt-get install ${pkgs[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
  # What apt-get installed must satisfy the check, or the list's probe is wrong.
  check ""
}

case ${1:-} in
  "") install ;;
  --check) check "${2:-}" ;;
  -h | --help) usage ;;
  *) echo "deps.sh: unknown argument '$1'" >&2; usage ;;
esac
