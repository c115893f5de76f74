#!/bin/sh
# Install Debian's RabbitMQ server for the wire-protocol tests (tests/wire/test_amqp_captures.py
# makes a fresh capture with scripts/make_amqp_captures.py when it is there). The capture
# script starts a throw-away broker of its own (its own node name, ports and data directory);
# the Debian service is not needed. Idempotent and quiet; needs root.
set -eu
if [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/rabbitmq.sh: run as root to apt-get install rabbitmq-server" >&2
    exit 1
fi
log=$(mktemp)
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends rabbitmq-server; } \
        >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "scripts/rabbitmq.sh: could not install rabbitmq-server" >&2
    exit 1
fi
rm -f "$log"
test -x /usr/lib/rabbitmq/bin/rabbitmq-server
