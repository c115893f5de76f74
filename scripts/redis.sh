#!/bin/sh
# Install Debian's Redis server for the wire-protocol tests (tests/wire/test_redis_captures.py
# makes a fresh capture with scripts/make_redis_captures.py when it is there). The capture
# script starts a throw-away server of its own; the Debian service is not needed. Idempotent
# and quiet; needs root.
set -eu
if [ -x /usr/bin/redis-server ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/redis.sh: run as root to apt-get install redis-server" >&2
    exit 1
fi
log=$(mktemp)
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends redis-server; } \
        >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "scripts/redis.sh: could not install redis-server" >&2
    exit 1
fi
rm -f "$log"
test -x /usr/bin/redis-server
