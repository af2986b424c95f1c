# auth.sh: sourced by the other scripts. Makes a private temporary dir ($tmp, removed on exit)
# and, when paragond's API token is readable, the curl arguments that send it: "${auth[@]}"
# (empty otherwise). The header goes through a file in $tmp, so the token never shows in the
# process list.
#   PARAGON_TOKEN       the token itself (as the paragon CLI takes it), else
#   PARAGON_TOKEN_FILE  a file holding it (default: data/token of this checkout, where run.sh keeps it)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
token_file=${PARAGON_TOKEN_FILE:-$(dirname "${BASH_SOURCE[0]}")/../../data/token}
auth=()
if [[ -n ${PARAGON_TOKEN:-} ]]; then
    printf 'Authorization: Bearer %s\n' "$PARAGON_TOKEN" > "$tmp/auth"
    auth=(-H "@$tmp/auth")
elif [[ -r $token_file ]]; then
    printf 'Authorization: Bearer %s\n' "$(tr -d '[:space:]' < "$token_file")" > "$tmp/auth"
    auth=(-H "@$tmp/auth")
fi
