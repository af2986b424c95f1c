#!/usr/bin/env bash
# Prints a job's recorded metrics (one loss and one accuracy point per epoch for training)
# as a table: name, step, value.
#   usage: metrics.sh ID [NAME]     NAME keeps one series, e.g. loss
#   PARAGON_URL  server address (default http://127.0.0.1:8080)
#   PARAGON_TOKEN, else PARAGON_TOKEN_FILE  paragond's API token, sent when readable (reads need it only when
#                       paragond listens off loopback; default: data/token of this checkout)
set -euo pipefail

url=${PARAGON_URL:-http://127.0.0.1:8080}
url=${url%/}
id=${1:-}
name=${2:-}

if [[ ! $id =~ ^[0-9]+$ ]]; then
    echo "usage: $(basename "$0") ID [NAME]" >&2
    exit 1
fi
if [[ -n $name && ! $name =~ ^[A-Za-z0-9_.-]+$ ]]; then
    echo "metrics: NAME may hold only letters, digits and _ . -" >&2
    exit 1
fi

. "$(dirname "$0")/auth.sh"

query=${name:+?name=$name}
if ! status=$(curl -sS --max-time 30 -o "$tmp/body" -w '%{http_code}' \
        -H 'Accept: application/json' "${auth[@]}" "$url/api/v1/jobs/$id/metrics$query"); then
    echo "metrics: cannot reach paragond at $url" >&2
    exit 1
fi
if [[ $status != 2?? ]]; then
    echo "metrics: the server answered HTTP $status for job $id:" >&2
    cat "$tmp/body" >&2
    echo >&2
    exit 1
fi

# One metric object per line, then pick its three fields; plain awk, no JSON tool needed.
tr -d '\n' < "$tmp/body" | tr '{}' '\n' | awk '
    function field(key,    s) {
        if (!match($0, "\"" key "\"[ \t]*:[ \t]*(\"[^\"]*\"|[-0-9.eE+]+|null)")) return ""
        s = substr($0, RSTART, RLENGTH)
        sub(/^"[^"]*"[ \t]*:[ \t]*/, "", s)
        gsub(/"/, "", s)
        return s
    }
    /"step"/ && /"value"/ {
        if (!n++) printf "%-12s %8s  %s\n", "name", "step", "value"
        printf "%-12s %8s  %s\n", field("name"), field("step"), field("value")
    }
    END { if (!n) print "(no metrics recorded)" > "/dev/stderr" }'
