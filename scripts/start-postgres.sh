#!/usr/bin/env bash
# Start a throwaway PostgreSQL cluster for the store's tests, on 127.0.0.1, in a
# temp folder, and print the line that tells the tests where it is:
#
#   eval "$(scripts/start-postgres.sh)"     # exports TETHER_TEST_POSTGRES=postgresql://...
#
# Uses Debian's postgresql package (installed with apt-get when missing). initdb
# refuses to run as root, so as root the cluster belongs to the postgres user.
# The server stops with: pg_ctl -D DIR stop (eval "$TETHER_TEST_POSTGRES_STOP" does it and removes DIR).
set -euo pipefail
find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
PGBIN="$(find_bin)"
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
    echo "start-postgres: installing Debian's postgresql package" >&2
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    else
        sudo apt-get update -qq >&2 && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    fi
    PGBIN="$(find_bin)"
fi
DIR="$(mktemp -d /tmp/tether-pg.XXXXXX)"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
as_owner() { "$@"; }
OWNER="$(id -un)"
if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$DIR"
    OWNER=postgres
    as_owner() { runuser -u postgres -- "$@"; }
fi
as_owner "$PGBIN/initdb" -D "$DIR/data" -U "$OWNER" --auth=trust -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 \
    || { cat "$DIR/initdb.log" >&2; exit 1; }
as_owner "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c fsync=off -c max_connections=200" start >&2 \
    || { cat "$DIR/server.log" >&2; exit 1; }
echo "start-postgres: PostgreSQL on 127.0.0.1:$PORT (data in $DIR; stop: $PGBIN/pg_ctl -D $DIR/data stop)" >&2
echo "export TETHER_TEST_POSTGRES=postgresql://$OWNER@127.0.0.1:$PORT/postgres"
# the line that stops it and removes its folder (.ci/run runs it on exit)
STOP="$PGBIN/pg_ctl -D $DIR/data -m fast stop"
[ "$OWNER" = postgres ] && [ "$(id -u)" = 0 ] && STOP="runuser -u postgres -- $STOP"
echo "export TETHER_TEST_POSTGRES_STOP='$STOP >/dev/null 2>&1; rm -rf $DIR'"
