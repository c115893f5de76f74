#!/bin/sh
# Install Debian's MariaDB server for the MySQL wire-protocol tests (tests/wire/test_mysql_captures.py
# makes fresh captures with scripts/make_mysql_captures.py when it is there). Only the binaries
# are used: the capture script makes a throw-away data directory of its own and starts mariadbd
# on 127.0.0.1, so the Debian service is not started. Idempotent and quiet; needs root.
set -eu
if command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/mysql.sh: run as root to apt-get install mariadb-server" >&2
    exit 1
fi
log=$(mktemp)
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d keeps the package's post-install from starting the Debian service
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    made_policy=1
fi
ok=1
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends mariadb-server; } \
        >"$log" 2>&1; then
    ok=0
fi
[ "$made_policy" = 1 ] && rm -f "$policy"
if [ "$ok" = 0 ]; then
    cat "$log" >&2
    rm -f "$log"
    echo "scripts/mysql.sh: could not install mariadb-server" >&2
    exit 1
fi
rm -f "$log"
[ -x /usr/sbin/mariadbd ]
