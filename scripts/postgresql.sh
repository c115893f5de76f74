#!/bin/sh
# Install Debian's PostgreSQL server for the wire-protocol tests (tests/wire/test_pg_captures.py
# makes fresh captures with scripts/make_pg_captures.py when it is there). Only the binaries
# are used: the capture script makes a throw-away cluster of its own, so the Debian service
# is not started. Idempotent and quiet; needs root.
set -eu
if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/postgresql.sh: run as root to apt-get install postgresql" >&2
    exit 1
fi
log=$(mktemp)
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql; } \
        >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "scripts/postgresql.sh: could not install postgresql" >&2
    exit 1
fi
rm -f "$log"
ls /usr/lib/postgresql/*/bin/postgres >/dev/null
