#!/usr/bin/env bash
# Installs the Debian packages paragon needs and that are missing; does nothing when all are
# present. Works as root or through sudo, non-interactively (CI has no standard input).
#   scripts/install-deps.sh          what building and running paragond needs
#   scripts/install-deps.sh --test   plus what the test suite needs
#   scripts/install-deps.sh --cluster  plus the PostgreSQL server scripts/cluster.sh starts
set -euo pipefail

packages=(
  build-essential pkg-config python3 meson ninja-build
  ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo
  libmicrohttpd-dev libjansson-dev libsqlite3-dev libpq-dev zlib1g-dev libcurl4-openssl-dev
  curl sqlite3 dataset-fashion-mnist fortunes
  openmpi-bin libopenmpi-dev
)
case "${1:-}" in
  --test)
    # Criterion; Oclgrind, the OpenCL simulator test_oclgrind runs the kernels on; and for the
    # dashboard's browser test, Debian's Chromium and Node.js (npm comes with some Node.js
    # builds; Debian packages it apart); PostgreSQL, the server test_store_postgresql runs the
    # store's tests on (a throwaway cluster through pg_virtualenv, tests/with_postgresql.sh)
    packages+=(libcriterion-dev oclgrind chromium nodejs postgresql)
    command -v npm >/dev/null 2>&1 || packages+=(npm)
    ;;
  --cluster)
    # scripts/cluster.sh: a throwaway PostgreSQL server for the nodes' store
    packages+=(postgresql)
    ;;
  "") ;;
  *) echo "install-deps.sh: unknown option '$1' (expected --test, --cluster or nothing)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install-deps: missing packages (${missing[*]}) and neither root nor sudo is available" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" </dev/null
