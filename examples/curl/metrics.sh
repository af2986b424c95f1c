#!/usr/bin/env bash
# Prints a job's recorded metrics (one loss and one accuracy point per epoch for training)
# as a table: name, step, value; with --summary, one line per metric instead: how many points,
# the first and the last (step and value), the lowest and the highest value.
#   usage: metrics.sh [--summary] ID [NAME]     NAME keeps one series, e.g. loss
#   PARAGON_URL  server address (default http://127.0.0.1:8080)
#   PARAGON_TOKEN, else PARAGON_TOKEN_FILE  paragond's API token, sent when readable (reads need it only when
#                       paragond listens off loopback; default: data/token of this checkout)
set -euo pipefail

url=${PARAGON_URL:-http://127.0.0.1:8080}
url=${url%/}
summary=0
if [[ ${1:-} == --summary ]]; then
    summary=1
    shift
fi
id=${1:-}
name=${2:-}

if [[ ! $id =~ ^[0-9]+$ ]]; then
    echo "usage: $(basename "$0") [--summary] ID [NAME]" >&2
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
tr -d '\n' < "$tmp/body" | tr '{}' '\n' | awk -v summary="$summary" '
    function field(key,    s) {
        if (!match($0, "\"" key "\"[ \t]*:[ \t]*(\"[^\"]*\"|[-0-9.eE+]+|null)")) return ""
        s = substr($0, RSTART, RLENGTH)
        sub(/^"[^"]*"[ \t]*:[ \t]*/, "", s)
        gsub(/"/, "", s)
        return s
    }
    /"step"/ && /"value"/ {
        k = field("name"); s = field("step"); v = field("value")
        if (summary) {  # the server answers each series in step order
            if (!(k in count)) { order[++names] = k; first[k] = s " " v; lo[k] = hi[k] = v }
            count[k]++; last[k] = s " " v
            if (v + 0 < lo[k] + 0) lo[k] = v
            if (v + 0 > hi[k] + 0) hi[k] = v
            n++
            next
        }
        if (!n++) printf "%-12s %8s  %s\n", "name", "step", "value"
        printf "%-12s %8s  %s\n", k, s, v
    }
    END {
        if (!n) { print "(no metrics recorded)" > "/dev/stderr"; exit }
        if (!summary) exit
        printf "%-20s %7s  %-22s  %-22s  %s\n", "name", "points", "first (step value)", "last (step value)", "range"
        for (i = 1; i <= names; i++) {
            k = order[i]
            printf "%-20s %7d  %-22s  %-22s  %s..%s\n", k, count[k], first[k], last[k], lo[k], hi[k]
        }
    }'
