#!/usr/bin/env bash
# Install what the benchmark needs: tcpdump, GNU time and openssl from Debian's packages, the
# capture generator's venv (bench/.venv-gen: hypercorn, httpx, h2, PyYAML; never the project's
# .venv), and with --tshark also tshark (the comparison rows of bench/run.py).
#   bash bench/setup.sh [--tshark]
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
need=()
command -v tcpdump >/dev/null 2>&1 || [ -x /usr/bin/tcpdump ] || need+=(tcpdump)
[ -x /usr/bin/time ] || need+=(time)
command -v openssl >/dev/null 2>&1 || need+=(openssl)  # certificates of the --tls captures
if [[ " $* " == *" --tshark "* ]] && ! command -v tshark >/dev/null 2>&1; then
    # wireshark-common asks whether non-root users may capture; answer it up front.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    need+=(tshark)
fi
if ((${#need[@]})); then
    apt-get update -qq
    apt-get install -y -qq "${need[@]}"
fi
python3 -c 'import genlib; print("generator venv:", genlib.ensure_gen_venv())'
