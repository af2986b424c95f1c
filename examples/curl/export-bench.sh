#!/usr/bin/env bash
# Exports the recorded mlp-forward benchmark rows from paragond into the current directory:
# mlp-forward.csv (Paragon-Py's columns: id,shape,estMB,cpu_ms,gpu_ms,speedup,mae,max,
# gpu_init_ms,adapter) and mlp-forward.json ({"rows":[...]} with every recorded field).
# Run a bench job first, e.g. {"kind":"bench","suite":"mlp-forward","device":"all"}.
#   PARAGON_URL  server address (default http://127.0.0.1:8080)
#   PARAGON_TOKEN, else PARAGON_TOKEN_FILE  paragond's API token, sent when readable (reads need it only when
#                       paragond listens off loopback; default: data/token of this checkout)
set -euo pipefail

url=${PARAGON_URL:-http://127.0.0.1:8080}
url=${url%/}
suite=mlp-forward

. "$(dirname "$0")/auth.sh"

# fetch FORMAT: the export in that format, into $suite.FORMAT once the server answered 2xx.
fetch() {
    local format=$1 status
    if ! status=$(curl -sS --max-time 60 -o "$tmp/body" -w '%{http_code}' "${auth[@]}" \
            "$url/api/v1/benchmarks?suite=$suite&format=$format"); then
        echo "export-bench: cannot reach paragond at $url" >&2
        exit 1
    fi
    if [[ $status != 2?? ]]; then
        echo "export-bench: the server answered HTTP $status for the $format export:" >&2
        cat "$tmp/body" >&2
        echo >&2
        exit 1
    fi
    mv "$tmp/body" "$suite.$format"
}

fetch csv
fetch json

# A header line, then one line per row (adapter names hold no line breaks).
rows=$(($(wc -l < "$suite.csv") - 1))
echo "wrote $suite.csv and $suite.json ($rows row(s))"
if ((rows == 0)); then
    echo "export-bench: no $suite rows recorded yet; submit a bench job first" >&2
fi
