"""Count what tshark decodes in every corpus packet capture, for tests/test_corpus_pcaps.py.

Writes tests/data/tshark_counts.json (the tshark version and, per capture, the counts below)
so the test compares agentshark with tshark without tshark installed. Run it again after
the corpus changes (tshark from bench/setup.sh --tshark)::

    python scripts/tshark_counts.py

Counts per capture (every one a ``tshark -r FILE -Y FILTER`` display filter, TLS decrypted
with the key log embedded in pcapng files, nothing else configured):
- ``tcp_streams``: distinct ``tcp.stream`` indexes (TCP connections tshark tells apart);
- ``http_requests`` / ``http_responses``: frames matching ``http.request`` /
  ``http.response`` (HTTP/1.x; tshark pairs nothing, so a request without its response
  counts, and the reverse);
- ``http2_requests`` / ``http2_responses``: ``:method`` / ``:status`` header fields
  (``http2.header.name`` occurrences, several may share a frame), over TCP only (HTTP/3 is
  not counted). The gRPC captures use port 50051, which tshark does not take for HTTP/2
  by itself: they are read with ``-d tcp.port==50051,http2`` (DECODE_AS);
- ``tls_handshake_streams``: TCP connections with a TLS ClientHello
  (``tls.handshake.type == 1``; distinct ``tcp.stream``, so a second ClientHello after a
  HelloRetryRequest, or a retransmitted one, counts once).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
OUT = ROOT / "tests" / "data" / "tshark_counts.json"
DECODE_AS = {"PacktPublishing__gRPC-Go-for-Professionals/": ["-d", "tcp.port==50051,http2"]}


def fields(path: Path, display_filter: str, field: str) -> list[str]:
    """Every value of ``field`` in the frames matching ``display_filter``."""
    extra = [a for prefix, args in DECODE_AS.items() if prefix in str(path) for a in args]
    out = subprocess.run(
        [
            "tshark",
            "-n",
            "-r",
            str(path),
            *extra,
            "-Y",
            display_filter,
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=;",
            "-e",
            field,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [v for line in out.splitlines() for v in line.split(";") if v]


def counts(path: Path) -> dict[str, int]:
    names = fields(path, "tcp && http2.header.name", "http2.header.name")
    return {
        "tcp_streams": len(set(fields(path, "tcp", "tcp.stream"))),
        "http_requests": len(fields(path, "tcp && http.request", "frame.number")),
        "http_responses": len(fields(path, "tcp && http.response", "frame.number")),
        "http2_requests": names.count(":method"),
        "http2_responses": names.count(":status"),
        "tls_handshake_streams": len(
            set(fields(path, "tcp && tls.handshake.type == 1", "tcp.stream"))
        ),
    }


def main() -> None:
    version = subprocess.run(["tshark", "--version"], capture_output=True, text=True, check=True)
    files = sorted(
        json.loads(line)["file"]
        for line in (CORPUS / "manifest.jsonl").read_text().splitlines()
        if json.loads(line)["format"] == "pcap"
    )
    result = {
        "tshark": version.stdout.splitlines()[0],
        "made_by": "scripts/tshark_counts.py",
        "captures": {name: counts(CORPUS / name) for name in files},
    }
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(files)} captures")


if __name__ == "__main__":
    main()
