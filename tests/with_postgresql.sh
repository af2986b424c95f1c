#!/usr/bin/env bash
# with_postgresql.sh COMMAND...: runs COMMAND with PARAGON_TEST_STORE=postgresql and libpq's PG*
# variables naming a PostgreSQL server: the one they already name, or else a throwaway cluster
# that Debian's pg_virtualenv starts for the command and removes after it (it runs as root too:
# the cluster runs as the postgres user). Exits 77 (meson's "skipped") when PostgreSQL is not
# installed: scripts/install-deps.sh installs it.
set -euo pipefail
export PARAGON_TEST_STORE=postgresql
if [ -n "${PGHOST:-}" ]; then
  exec "$@"
fi
if ! command -v pg_virtualenv >/dev/null 2>&1; then
  echo "with_postgresql.sh: PostgreSQL is not installed (scripts/install-deps.sh --test installs it); skipped" >&2
  exit 77
fi
# A port of its own: pg_virtualenv takes the first free one, and two of these starting at once
# (meson runs tests side by side) would both take it. One from our pid, past any in use.
port=$((20000 + $$ % 20000))
while [ -e "/var/run/postgresql/.s.PGSQL.$port" ] || (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
  port=$((port + 1))
done
# -t: the cluster in a temporary directory (as root too); fsync off: nothing in it outlives the run.
exec pg_virtualenv -t -c "-p $port" -o fsync=off "$@"
