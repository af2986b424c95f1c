#!/usr/bin/env bash
# The README's second command (and what .ci/run calls): install what is missing, build with
# ASan+UBSan, and run every test. Ends with a line "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
# playwright-core for the browser test, at the version package-lock.json pins (no browser download)
if [ ! -d tests/browser/node_modules/playwright-core ]; then
  npm ci --prefix tests/browser --no-audit --no-fund
fi
if [ ! -f build-test/build.ninja ]; then
  meson setup build-test --buildtype=debugoptimized -Db_sanitize=address,undefined
fi
ninja -C build-test
status=0
meson test -C build-test --print-errorlogs --num-processes 2 || status=$?
# One closing line over every Criterion test case (meson counts executables, not cases).
log=build-test/meson-logs/testlog.txt
if [ -f "$log" ]; then
  awk '/Synthesis: Tested:/ {
         for (i = 1; i <= NF; i++) {
           if ($i == "Passing:") p += $(i + 1)
           if ($i == "Failing:" || $i == "Crashing:") f += $(i + 1)
         }
       }
       END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
fi
exit $status
