#!/usr/bin/env bash
# The whole XOR example against a running paragond: submit the job, wait for it, print a summary
# of its metrics (each one's points, first, last and range; ALL_METRICS=1: every point), then its
# final result. Exits 1 if the job does not succeed.
#   PARAGON_URL  server address (default http://127.0.0.1:8080)
#   TIMEOUT      seconds to wait for the job (default 300)
#   PARAGON_TOKEN, else PARAGON_TOKEN_FILE  paragond's API token (default: data/token of this checkout)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
url=${PARAGON_URL:-http://127.0.0.1:8080}
url=${url%/}
export PARAGON_URL=$url

id=$("$here/submit-xor.sh")
echo "submitted job $id ($url/api/v1/jobs/$id)"

status=0
"$here/wait.sh" "$id" || status=$?

echo
echo "metrics:"
if [[ ${ALL_METRICS:-0} == 1 ]]; then
    "$here/metrics.sh" "$id" || true
else
    "$here/metrics.sh" --summary "$id" || true
fi

if ((status != 0)); then
    exit 1
fi

# The result object of a job is flat: {"accuracy":1.0,"loss":0.0123,...}; one key per line.
echo
echo "result:"
. "$here/auth.sh"
curl -sS --max-time 30 -H 'Accept: application/json' "${auth[@]}" "$url/api/v1/jobs/$id" |
    tr -d '\n' |
    grep -o '"result"[[:space:]]*:[[:space:]]*{[^}]*}' |
    sed 's/^"result"[[:space:]]*:[[:space:]]*{//; s/}$//' |
    tr ',' '\n' |
    sed 's/^[[:space:]]*"\([^"]*\)"[[:space:]]*:[[:space:]]*/  \1: /; s/"//g'
