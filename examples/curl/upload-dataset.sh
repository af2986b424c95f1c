#!/usr/bin/env bash
# Uploads a dataset file to paragond (PUT /api/v1/datasets/NAME), with its SHA-256 in the
# Content-SHA256 header so that paragond stores nothing that changed on the way, and prints the
# stored dataset (name, bytes, format, sha256, dims or chars). A spec then names it by NAME:
# {"source":"idx","train_images":NAME,...} or {"source":"text","path":NAME}.
#   usage: upload-dataset.sh FILE [NAME]   (NAME: FILE's own; .idx, -ubyte, .idx.gz, -ubyte.gz, .txt)
#   PARAGON_URL  server address (default http://127.0.0.1:8080)
#   PARAGON_TOKEN, PARAGON_TOKEN_FILE  paragond's API token (uploads need it; see auth.sh)
set -euo pipefail

file=${1:?usage: upload-dataset.sh FILE [NAME]}
name=${2:-$(basename "$file")}
url=${PARAGON_URL:-http://127.0.0.1:8080}
url=${url%/}

. "$(dirname "$0")/auth.sh"

sha=$(sha256sum "$file" | cut -d' ' -f1)
# --data-binary @file would read it into memory first; -T streams it (curl sends PUT).
if ! status=$(curl -sS -o "$tmp/body" -w '%{http_code}' "${auth[@]}" -H "Content-SHA256: $sha" \
        -H 'Content-Type: application/octet-stream' -T "$file" "$url/api/v1/datasets/$name"); then
    echo "upload-dataset: cannot reach paragond at $url" >&2
    exit 1
fi
cat "$tmp/body"
echo
if [[ $status != 2?? ]]; then
    echo "upload-dataset: the server answered HTTP $status" >&2
    exit 1
fi
