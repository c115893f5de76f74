#!/usr/bin/env bash
# Install agentshark with its proxy extra (mitmproxy) into its own venv, .venv-proxy at the
# repository root. mitmproxy 11.0.2, the last release for Python 3.11, holds h11 at 0.14,
# which the test extra's httpx/httpcore (h11 >= 0.16) cannot share one venv with; so the
# tests run `agentshark proxy` and read mitmproxy flow files with this venv's python, and
# drive it with the SDKs of the project's venv. Idempotent: a venv that already imports
# mitmproxy is refreshed (editable install, so it runs the working tree) and kept.
#
#   bash scripts/proxy_venv.sh         # then: .venv-proxy/bin/agentshark proxy --help
#
# The tests (tests/proxy/) find it there, or use the running interpreter when it has
# mitmproxy; without either they skip and name this script.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-proxy"
python="${PYTHON:-python3.11}"
version() { "$venv/bin/python" -c "import importlib.metadata as m; print(m.version('mitmproxy'))"; }
if [ -x "$venv/bin/python" ] && version >/dev/null 2>&1; then
    # refreshed: the project's dependencies may have grown since the venv was made
    "$venv/bin/pip" install -q -e "$root[proxy]" 2>&1 | { grep -v "^WARNING: Location" || true; }
    echo "proxy_venv.sh: mitmproxy $(version) already in $venv, dependencies refreshed"
    exit 0
fi
"$python" -m venv "$venv"
"$venv/bin/pip" install -q -e "$root[proxy]" 2>&1 | { grep -v "^WARNING: Location" || true; }
echo "proxy_venv.sh: mitmproxy $(version) installed in $venv"
