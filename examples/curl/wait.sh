#!/usr/bin/env bash
# Waits for job ID to finish, polling every 0.5 s and printing each change of state or
# progress. Exits 0 when the job succeeded, 1 when it failed or was cancelled, when it does
# not exist, or when TIMEOUT seconds pass first.
#   usage: wait.sh ID
#   PARAGON_URL  server address (default http://127.0.0.1:8080)
#   TIMEOUT      seconds to wait at most (default 300)
#   PARAGON_TOKEN, else PARAGON_TOKEN_FILE  paragond's API token, sent when readable (reads need it only when
#                       paragond listens off loopback; default: data/token of this checkout)
set -euo pipefail

url=${PARAGON_URL:-http://127.0.0.1:8080}
url=${url%/}
timeout=${TIMEOUT:-300}
id=${1:-}

if [[ ! $id =~ ^[0-9]+$ ]]; then
    echo "usage: $(basename "$0") ID   (a numeric job id)" >&2
    exit 1
fi
if [[ ! $timeout =~ ^[0-9]+$ ]]; then
    echo "wait: TIMEOUT must be a whole number of seconds, not '$timeout'" >&2
    exit 1
fi

# json_str KEY / json_num KEY: the first top-level-looking "KEY": value in stdin. Enough for
# the flat fields of a job object; the job's own fields come before any nested "spec".
json_str() { grep -o "\"$1\"[[:space:]]*:[[:space:]]*\"\\([^\"\\\\]\\|\\\\.\\)*\"" | head -n 1 |
             sed 's/^"[^"]*"[[:space:]]*:[[:space:]]*"//; s/"$//; s/\\"/"/g; s/\\\\/\\/g' || true; }
json_num() { grep -o "\"$1\"[[:space:]]*:[[:space:]]*[-0-9.eE+]*" | head -n 1 |
             sed 's/^"[^"]*"[[:space:]]*:[[:space:]]*//' || true; }

. "$(dirname "$0")/auth.sh"

start=$SECONDS
deadline=$((start + timeout))
last="" state="" unreachable=0
while :; do
    if status=$(curl -sS --max-time 10 -o "$tmp/body" -w '%{http_code}' \
            -H 'Accept: application/json' "${auth[@]}" "$url/api/v1/jobs/$id" 2>"$tmp/err"); then
        unreachable=0
        if [[ $status != 2?? ]]; then
            echo "wait: the server answered HTTP $status for job $id:" >&2
            cat "$tmp/body" >&2
            echo >&2
            exit 1
        fi
        state=$(json_str state < "$tmp/body")
        progress=$(json_num progress < "$tmp/body")
        pct=$(awk -v p="${progress:-0}" 'BEGIN { printf "%5.1f%%", p * 100 }')
        line="$state $pct"
        if [[ $line != "$last" ]]; then
            printf 'job %s  %-9s %s  (%ds)\n' "$id" "$state" "$pct" "$((SECONDS - start))"
            last=$line
        fi
        case $state in
            succeeded) exit 0 ;;
            failed|cancelled)
                msg=$(json_str message < "$tmp/body")
                [[ -n $msg ]] && echo "job $id $state: $msg" >&2
                exit 1 ;;
        esac
    elif ((unreachable == 0)); then
        # A restarting paragond re-queues its jobs: keep asking until the deadline.
        echo "wait: cannot reach paragond at $url ($(tr -d '\n' < "$tmp/err")); retrying" >&2
        unreachable=1
    fi
    if ((SECONDS >= deadline)); then
        echo "wait: job $id still ${state:-unknown} after ${timeout} s" >&2
        exit 1
    fi
    sleep 0.5
done
