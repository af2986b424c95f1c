#!/usr/bin/env bash
# scripts/cluster.sh N [PORT]: a cluster of N paragond nodes on this machine sharing a throwaway
# PostgreSQL (Debian's pg_virtualenv: a temporary cluster, as root too) and one shared directory,
# on ports PORT, PORT+1, ... (default 9101). Prints each node's URL, the dashboard link and the
# CLI's settings; Ctrl-C stops the nodes, then the database goes with its temporary directory.
# Installs and builds what is missing first, as run.sh does. The README's "Cluster" section says
# how the same runs on several machines.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-3}
base=${2:-9101}
case $n in '' | *[!0-9]* | 0) echo "usage: scripts/cluster.sh N [PORT] (N nodes, N >= 1)" >&2; exit 2 ;; esac
case $base in '' | *[!0-9]*) echo "cluster.sh: PORT must be a number" >&2; exit 2 ;; esac

if [ -z "${PARAGON_CLUSTER_INSIDE:-}" ]; then
  scripts/install-deps.sh --cluster
  if [ ! -f build/build.ninja ]; then
    meson setup build --buildtype=release
  fi
  ninja -C build
  # the rest runs with a PostgreSQL server of its own (PGHOST, PGPORT, ... set), removed after
  export PARAGON_CLUSTER_INSIDE=1
  port=$((20000 + $$ % 20000)) # a port of its own, past any in use (see tests/with_postgresql.sh)
  while [ -e "/var/run/postgresql/.s.PGSQL.$port" ] || (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    port=$((port + 1))
  done
  exec pg_virtualenv -t -c "-p $port" -o fsync=off "$0" "$n" "$base"
fi

createdb paragon
shared=$(mktemp -d /tmp/paragon-cluster-XXXXXX)
chmod 0755 "$shared"
pids=()
stop() {
  trap - INT TERM EXIT
  echo "cluster.sh: stopping the nodes" >&2
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$shared"
}
trap stop INT TERM EXIT
for ((k = 1; k <= n; k++)); do
  port=$((base + k - 1))
  build/paragond --port "$port" --store "postgresql:///paragon" --shared-dir "$shared" \
    --node "node$k" 2> >(sed -u "s/^/[node$k] /" >&2) > >(sed -u "s/^/[node$k] /") &
  pids+=($!)
done
for ((k = 1; k <= n; k++)); do
  port=$((base + k - 1))
  until curl -s "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
    if ! kill -0 "${pids[k - 1]}" 2>/dev/null; then
      echo "cluster.sh: node$k did not start (its lines above say why)" >&2
      stop
      exit 1
    fi
    sleep 0.2
  done
done
token=$(tr -d '\n' < "$shared/token")
echo
echo "A cluster of $n paragond nodes on one PostgreSQL store ($PGHOST:$PGPORT, database paragon):"
for ((k = 1; k <= n; k++)); do echo "  node$k  http://127.0.0.1:$((base + k - 1))/"; done
echo "Dashboard: http://127.0.0.1:$base/#token=$token"
echo "CLI:       export PARAGON_URL=http://127.0.0.1:$base PARAGON_TOKEN_FILE=$shared/token"
echo "           build/paragon nodes; build/paragon submit examples/jobs/xor.json --wait"
echo "Ctrl-C stops them."
wait
