#!/usr/bin/env bash
# Install a PostgreSQL server with the pgvector extension for the pgvector captures
# (scripts/make_pgvector_captures.py, tests/wire/test_pgvector_captures.py) into its own venv,
# .venv-pgvector at the repository root, never into the project's venv. Debian bookworm has no
# pgvector package, so the server is PyPI's `pgserver`, whose wheel bundles PostgreSQL's
# binaries (initdb, postgres, pg_ctl) with pgvector's `vector` extension built in; the venv
# also holds the client side: psycopg 3, the `pgvector` package's adapters and the openai SDK
# (the agent run). Idempotent: a
# venv whose server and extension are there is left as it is.
#
#   bash scripts/pgvector.sh
#
# Only the binaries are used: the capture script makes a throw-away cluster in a temporary
# folder, started as the `postgres` user (scripts/postgresql.sh makes it) when run as root.
# PGVECTOR_PGSERVER pins pgserver's version (default: the newest the index has).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-pgvector"
python="${PYTHON:-python3.11}"
spec="pgserver${PGVECTOR_PGSERVER:+==$PGVECTOR_PGSERVER}"
find_bin() {
    "$venv/bin/python" -c "import pgserver, pathlib; print(pathlib.Path(pgserver.__file__).parent / 'pginstall')"
}
ready() {
    local base
    base="$(find_bin 2>/dev/null)" || return 1
    [ -x "$base/bin/postgres" ] && [ -f "$base/share/postgresql/extension/vector.control" ] \
        && "$venv/bin/python" -c "import psycopg, pgvector.psycopg, openai" 2>/dev/null
}
if [ -x "$venv/bin/python" ] && ready; then
    echo "pgvector.sh: $("$(find_bin)/bin/postgres" --version) with pgvector already in $venv"
    exit 0
fi
"$python" -m venv "$venv"
quiet() { "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }; }
quiet "$venv/bin/pip" install -q --upgrade pip
quiet "$venv/bin/pip" install -q "$spec" "psycopg[binary]>=3.1" "pgvector" "numpy" "openai>=1.50"
if ! ready; then
    echo "pgvector.sh: pgserver gave no postgres binary with the vector extension" >&2
    exit 1
fi
echo "pgvector.sh: $("$(find_bin)/bin/postgres" --version) with pgvector installed in $venv"
