#!/bin/sh
# Install Debian's chromium for the viewer tests (tests/output/viewer, tests/test_cli_view.py).
# Idempotent and quiet; needs root. The tests drive it with Playwright's Python package
# (the `test` extra) through executable_path=/usr/bin/chromium: never `playwright install`.
set -eu
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/chromium.sh: run as root to apt-get install chromium" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium >/dev/null
test -x /usr/bin/chromium
