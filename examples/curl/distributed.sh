#!/usr/bin/env bash
# A distributed job against a running paragond: submit examples/jobs/fashion-mlp-diloco.json (or
# the spec given as $1: fashion-mlp-ddp.json is its ddp twin), wait for it, then print what each
# rank did and how much of the time went to communication. paragond runs the ranks under mpirun
# (docs/distributed.md). Exits 1 if the job fails.
#   PARAGON_URL         server address (default http://127.0.0.1:8080)
#   TIMEOUT             seconds to wait for the training (default 1800)
#   PARAGON_TOKEN, else PARAGON_TOKEN_FILE  paragond's API token (default: data/token of this checkout)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
url=${PARAGON_URL:-http://127.0.0.1:8080}
url=${url%/}
export PARAGON_URL=$url
export TIMEOUT=${TIMEOUT:-1800}

id=$("$here/submit-xor.sh" "${1:-$here/../jobs/fashion-mlp-diloco.json}")
echo "submitted job $id ($url/api/v1/jobs/$id)"
"$here/wait.sh" "$id"

. "$here/auth.sh"
curl -sS --max-time 30 -H 'Accept: application/json' "${auth[@]}" -o "$tmp/job" "$url/api/v1/jobs/$id"
python3 - "$tmp/job" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["result"]
d = r["distributed"]
print(f"{d['algorithm']} over {d['ranks']} ranks: test loss {r['test_loss']:.4f}, "
      f"accuracy {r['test_accuracy']:.4f}, {d['syncs']} syncs, "
      f"communication {100 * d['comm_share']:.1f} % of the time")
for x in d["per_rank"]:
    print(f"  rank {x['rank']} on {x['device']}: sent {x['bytes_sent'] / 1e6:.1f} MB, "
          f"{x['comm_seconds']:.2f} s in collectives ({100 * x['comm_share']:.1f} %)")
PY
