#!/usr/bin/env bash
# The README's first command: install what is missing, build, and start paragond on
# http://127.0.0.1:8080 with ./paragon.db and ./data. Extra arguments go to paragond
# (for example --port 9090).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release
fi
ninja -C build
# The API token paragond would create on its first start (the same format: 64 hex characters,
# mode 0600), made here so that the dashboard link below can carry it in its fragment, which
# the browser keeps to itself (the page moves it into its local storage).
if [ ! -f data/token ] && [[ " $* " != *" --token-file"* ]] && [[ " $* " != *" --data-dir"* ]]; then
  mkdir -p data
  (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > data/token && echo >> data/token)
fi
if [ -f data/token ] && [[ " $* " != *" --port"* ]]; then
  echo "Dashboard: http://127.0.0.1:8080/#token=$(tr -d '\n' < data/token)"
fi
exec build/paragond "$@"
