#!/usr/bin/env bash
# What the test suite needs besides the project's Python packages: Debian's tcpdump and tshark
# (scripts/tcpdump.sh, needs root) for the live-capture tests and the tshark oracle, chromium for the
# viewer tests (scripts/chromium.sh, needs root), an Arize Phoenix server for the OTLP
# tests (scripts/phoenix.sh, its own venv), mitmproxy for the proxy tests (scripts/proxy_venv.sh,
# its own venv), and Debian's PostgreSQL, MariaDB, Redis and RabbitMQ servers for the live wire-protocol captures
# (scripts/postgresql.sh, scripts/mysql.sh (MariaDB), scripts/redis.sh, scripts/rabbitmq.sh, need root),
# and PyPI's pgserver (PostgreSQL with pgvector, which Debian bookworm lacks) for the pgvector
# captures (scripts/pgvector.sh, its own venv). Run before the tests; .ci/run runs it and fails
# when a part fails. Elsewhere (`--soft`) a part that cannot be had is said and skipped: the
# tests that need it then skip with a reason naming the script.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
soft=0
[ "${1:-}" = "--soft" ] && soft=1
status=0
for part in tcpdump chromium phoenix proxy_venv postgresql pgvector mysql redis rabbitmq; do
    if ! bash "$root/scripts/$part.sh"; then
        echo "test_deps.sh: scripts/$part.sh failed; the tests that need it will skip" >&2
        status=1
    fi
done
[ "$soft" = 1 ] && exit 0
exit $status
