#!/bin/sh
# Install Debian's tcpdump and tshark: tcpdump for the tests that capture live loopback
# traffic (tests/test_cli_capture.py, tests/pipeline/test_capture.py, the fresh-capture tests
# of the wire protocols), tshark as the second oracle of the capture tests. Idempotent and
# quiet; needs root.
set -eu
if [ -x /usr/bin/tcpdump ] && [ -x /usr/bin/tshark ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/tcpdump.sh: run as root to apt-get install tcpdump tshark" >&2
    exit 1
fi
log=$(mktemp)
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends tcpdump tshark; } \
        >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "scripts/tcpdump.sh: could not install tcpdump and tshark" >&2
    exit 1
fi
rm -f "$log"
test -x /usr/bin/tcpdump && test -x /usr/bin/tshark
