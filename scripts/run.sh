#!/usr/bin/env bash
# The README's first command: install what is missing, build, and start paragond on
# http://127.0.0.1:8080 with ./paragon.db and ./data. Extra arguments go to paragond
# (for example --port 9090); the dashboard link it prints follows --host, --port, --data-dir
# and --token-file.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release
fi
ninja -C build
scripts/dashboard-link.sh "$@"
exec build/paragond "$@"
