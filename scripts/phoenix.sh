#!/usr/bin/env bash
# Install Arize Phoenix (the OTLP viewer the export tests push into) into its own venv,
# .venv-phoenix at the repository root, never into the project's venv. Idempotent: a venv
# whose `phoenix` command already runs is left as it is.
#
#   bash scripts/phoenix.sh            # then: .venv-phoenix/bin/phoenix serve
#
# The tests (tests/output/otlp/test_phoenix.py) find it there; without it they skip and name
# this script. PHOENIX_VERSION pins a version (default: the newest the index has).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-phoenix"
python="${PYTHON:-python3.11}"
spec="arize-phoenix${PHOENIX_VERSION:+==$PHOENIX_VERSION}"
version() { "$venv/bin/python" -c "import importlib.metadata as m; print(m.version('arize-phoenix'))"; }
if [ -x "$venv/bin/phoenix" ] && version >/dev/null 2>&1; then
    echo "phoenix.sh: arize-phoenix $(version) already in $venv"
    exit 0
fi
"$python" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip 2>&1 | { grep -v "^WARNING: Location" || true; }
"$venv/bin/pip" install -q "$spec" 2>&1 | { grep -v "^WARNING: Location" || true; }
echo "phoenix.sh: arize-phoenix $(version) installed in $venv"
