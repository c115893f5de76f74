"""Write what tshark reads of each QUIC stream: ``tests/data/quic/tshark_streams.json``.

    .venv/bin/python scripts/quic_tshark_oracle.py

For each HTTP/3 capture the QUIC tests use (the shared corpus ones, with their embedded
secrets, and the loopback ones of ``scripts/make_quic_captures.py`` with their key logs),
``tshark -z follow,quic,raw,<connection>,<stream>`` gives each stream's bytes per direction;
the file keeps their sizes and SHA-256 per stream of the first QUIC connection. The tests
compare agentshark's stream reassembly with these (tshark is the second oracle, issue 17).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
CAPTURES = ROOT / "tests" / "data" / "captures"
OUT = ROOT / "tests" / "data" / "quic" / "tshark_streams.json"
FILES = {
    "http3-connection7": (
        CORPUS / "mikekap__pcap2har/tests/resources/http3-connection7.pcap",
        None,
    ),
    "chrome-cloudflare-quic": (
        CORPUS / "FoxIO-LLC__ja4/pcap/chrome-cloudflare-quic-with-secrets.pcapng",
        None,
    ),
    **{
        name: (CAPTURES / name / "capture.pcap", CAPTURES / name / "keys.log")
        for name in ("h3_openai", "h3_v2_chacha_keyupdate", "h3_lossy")
    },
}


def _tshark(pcap: Path, keys: Path | None, *args: str) -> str:
    cmd = ["tshark", "-r", str(pcap), *(["-o", f"tls.keylog_file:{keys}"] if keys else []), *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def _streams(pcap: Path, keys: Path | None) -> dict[str, list[object]]:
    listed = _tshark(
        pcap,
        keys,
        "-Y",
        "quic.connection.number == 0 && quic.stream.stream_id",
        "-T",
        "fields",
        "-e",
        "quic.stream.stream_id",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    )
    ids = sorted({int(x) for line in listed.split() for x in line.split(",") if x})
    out: dict[str, list[object]] = {}
    for sid in ids:
        text = _tshark(pcap, keys, "-q", "-z", f"follow,quic,raw,0,{sid}")
        sides = [bytearray(), bytearray()]
        body = text.split("=" * 67)[1].splitlines()
        for line in body:
            if not line.strip() or line.startswith(("Follow:", "Filter:", "Node ")):
                continue
            side = 1 if line.startswith("\t") else 0
            sides[side] += bytes.fromhex(line.strip())
        out[str(sid)] = [
            len(sides[0]),
            len(sides[1]),
            hashlib.sha256(sides[0]).hexdigest(),
            hashlib.sha256(sides[1]).hexdigest(),
        ]
    return out


def main() -> None:
    result = {name: _streams(pcap, keys) for name, (pcap, keys) in FILES.items()}
    OUT.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    for name, streams in result.items():
        print(name, len(streams), "streams")


if __name__ == "__main__":
    main()
