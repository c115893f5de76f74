#!/bin/sh
# Install Debian's chromium for the viewer tests (tests/output/viewer, tests/test_cli_view.py),
# and a small CJK font (fonts-wqy-microhei) so that the Chinese of the seed 004 runs is drawn
# in screenshots (scripts/viewer_screenshots.py). Idempotent and quiet; needs root.
# The tests drive it with Playwright's Python package (the `test` extra) through
# executable_path=/usr/bin/chromium: never `playwright install`.
set -eu
if [ -x /usr/bin/chromium ] && [ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/chromium.sh: run as root to apt-get install chromium" >&2
    exit 1
fi
log=$(mktemp)
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        chromium fonts-wqy-microhei; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "scripts/chromium.sh: could not install chromium" >&2
    exit 1
fi
rm -f "$log"
test -x /usr/bin/chromium
