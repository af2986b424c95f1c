#!/usr/bin/env bash
# Prints the dashboard link (with the API token in its fragment, which the browser keeps to
# itself) and the PARAGON_URL of the paragond that these arguments start: run.sh calls it with
# paragond's own arguments just before starting it. Makes the token file first when missing, in
# the format paragond would (64 hex characters, mode 0600), so that the link can carry it.
set -euo pipefail
# Where paragond will listen and keep its token, from the same flags it reads (--flag V or
# --flag=V), so that the dashboard link below is the one it serves.
port=8080 host=127.0.0.1 data_dir=data token_file=
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  a=${args[i]} next=${args[i + 1]:-}
  case $a in
    --port) port=$next ;;        --port=*) port=${a#*=} ;;
    --host) host=$next ;;        --host=*) host=${a#*=} ;;
    --data-dir) data_dir=$next ;; --data-dir=*) data_dir=${a#*=} ;;
    --token-file) token_file=$next ;; --token-file=*) token_file=${a#*=} ;;
  esac
done
token_file=${token_file:-$data_dir/token}
# The API token paragond would create on its first start (the same format: 64 hex characters,
# mode 0600), made here so that the dashboard link can carry it in its fragment, which the
# browser keeps to itself (the page moves it into its local storage).
if [ ! -f "$token_file" ]; then
  mkdir -p "$(dirname "$token_file")"
  (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$token_file" && echo >> "$token_file")
fi
case $host in 0.0.0.0 | ::) shown=127.0.0.1 ;; *:*) shown="[$host]" ;; *) shown=$host ;; esac
if [ "$port" = 0 ]; then
  echo "Dashboard: paragond prints the port it picked; open http://$shown:PORT/#token=$(tr -d '\n' < "$token_file")"
else
  echo "Dashboard: http://$shown:$port/#token=$(tr -d '\n' < "$token_file")"
  env="PARAGON_URL=http://$shown:$port"
  [ "$token_file" = data/token ] || env="$env PARAGON_TOKEN_FILE=$token_file"
  echo "Client:    export $env  (then: build/paragon jobs, build/paragon submit SPEC --follow)"
fi
