#!/usr/bin/env bash
# The character GPT against a running paragond: submit examples/jobs/char-gpt.json (or the spec
# given as $1), wait for it (2,000 steps: a few minutes on a CPU), then stream a completion of
# PROMPT from it, a character at a time as the server sends them. Exits 1 if the job fails.
#   PARAGON_URL         server address (default http://127.0.0.1:8080)
#   PROMPT              the text to continue (default "The ")
#   MAX_TOKENS          characters to generate (default 300)
#   TIMEOUT             seconds to wait for the training (default 1800)
#   PARAGON_TOKEN, else PARAGON_TOKEN_FILE  paragond's API token (default: data/token of this checkout)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
url=${PARAGON_URL:-http://127.0.0.1:8080}
url=${url%/}
export PARAGON_URL=$url
export TIMEOUT=${TIMEOUT:-1800}
prompt=${PROMPT:-The }
max_tokens=${MAX_TOKENS:-300}
if [[ ! $max_tokens =~ ^[0-9]+$ ]]; then
    echo "char-gpt: MAX_TOKENS must be a whole number, not '$max_tokens'" >&2
    exit 1
fi

id=$("$here/submit-xor.sh" "${1:-$here/../jobs/char-gpt.json}")
echo "submitted job $id ($url/api/v1/jobs/$id)"
"$here/wait.sh" "$id"

# The body's prompt as a JSON string: backslashes and quotes escaped, control characters refused.
if [[ $prompt =~ [[:cntrl:]] ]]; then
    echo "char-gpt: PROMPT must not hold control characters" >&2
    exit 1
fi
json_prompt=$(printf '%s' "$prompt" | sed 's/\\/\\\\/g; s/"/\\"/g')

. "$here/auth.sh"
echo
echo "completion of \"$prompt\":"
printf '%s' "$prompt"
# Server-Sent Events: each "event: token" is followed by "data: {...,"text":"c"}"; the last
# event is the generate job's final state, whose result holds the whole text and tokens/s.
curl -sS -N --max-time 600 -H 'Content-Type: application/json' "${auth[@]}" \
    --data-binary "{\"prompt\":\"$json_prompt\",\"max_tokens\":$max_tokens,\"temperature\":0.8,\"stream\":true}" \
    "$url/api/v1/jobs/$id/generate" |
    while IFS= read -r line; do
        case $line in
        "event: token") next=token ;;
        "event: state") next=state ;;
        data:*)
            if [[ ${next:-} == token ]]; then
                piece=${line#*\"text\":\"}
                piece=${piece%\"\}}
                printf '%b' "${piece//\\\"/\"}"
            elif [[ ${next:-} == state && $line == *'"state":"succeeded"'* ]]; then
                rate=$(grep -o '"tokens_per_second":[0-9.]*' <<< "$line" | head -n 1 | cut -d: -f2)
                printf '\n(%s characters/s)\n' "${rate%.*}"
            fi
            next= ;;
        esac
    done
