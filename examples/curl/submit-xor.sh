#!/usr/bin/env bash
# Submits the canonical XOR training job (examples/jobs/xor.json, or the spec file given as
# $1) to paragond and prints the new job's id on stdout. On a rejected spec it prints the
# server's error body on stderr and exits 1.
#   PARAGON_URL         server address (default http://127.0.0.1:8080)
#   PARAGON_TOKEN, else PARAGON_TOKEN_FILE  paragond's API token (default: data/token of this checkout, where
#                       scripts/run.sh's paragond keeps it)
set -euo pipefail

url=${PARAGON_URL:-http://127.0.0.1:8080}
url=${url%/}
spec=${1:-$(dirname "$0")/../jobs/xor.json}

if [[ ! -r $spec ]]; then
    echo "submit-xor: cannot read job spec $spec" >&2
    exit 1
fi

. "$(dirname "$0")/auth.sh"
if [[ ${#auth[@]} -eq 0 ]]; then
    echo "submit-xor: cannot read the API token in $token_file (paragond prints where it is" \
         "when it starts; set PARAGON_TOKEN or PARAGON_TOKEN_FILE)" >&2
    exit 1
fi

if ! status=$(curl -sS --max-time 30 -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' \
        -H 'Content-Type: application/json' -H 'Accept: application/json' "${auth[@]}" \
        --data-binary "@$spec" "$url/api/v1/jobs"); then
    echo "submit-xor: cannot reach paragond at $url" >&2
    exit 1
fi

if [[ $status != 2?? ]]; then
    echo "submit-xor: the server answered HTTP $status:" >&2
    cat "$tmp/body" >&2
    echo >&2
    exit 1
fi

# The id is the last path segment of Location: /api/v1/jobs/7; the body's "id" is the fallback.
id=$(tr -d '\r' < "$tmp/headers" | sed -n 's|^[Ll]ocation:[[:space:]]*.*/jobs/\([0-9][0-9]*\)[[:space:]]*$|\1|p' | tail -n 1)
if [[ -z $id ]]; then
    id=$(grep -o '"id"[[:space:]]*:[[:space:]]*[0-9][0-9]*' "$tmp/body" | head -n 1 | grep -o '[0-9][0-9]*$' || true)
fi
if [[ -z $id ]]; then
    echo "submit-xor: HTTP $status but no job id in the answer:" >&2
    cat "$tmp/body" >&2
    echo >&2
    exit 1
fi
echo "$id"
