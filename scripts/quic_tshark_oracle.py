"""Write what tshark reads of each QUIC stream: ``tests/data/quic/tshark_streams.json``.

    .venv/bin/python scripts/quic_tshark_oracle.py

For each HTTP/3 capture the QUIC tests use (the shared corpus ones, with their embedded
secrets, and the loopback ones of ``scripts/make_quic_captures.py`` with their key logs),
tshark's decryption gives each STREAM frame (``-T json``: stream id, offset, data), joined
here by offset per stream and direction; the file keeps their sizes and SHA-256 per stream of
the first QUIC connection. The tests
compare agentshark's stream reassembly with these (tshark is the second oracle, issue 17).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
        for name in (
            "h3_openai",
            "h3_v2_chacha_keyupdate",
            "h3_lossy",
            "h3_version_negotiation",
            "h3_push_ws_datagram",
        )
    },
}


def _tshark(pcap: Path, keys: Path | None, *args: str) -> str:
    cmd = ["tshark", "-r", str(pcap), *(["-o", f"tls.keylog_file:{keys}"] if keys else []), *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def _frames(layers: dict[str, Any]) -> Iterator[dict[str, Any]]:
    quic = layers.get("quic", [])
    for packet in quic if isinstance(quic, list) else [quic]:
        frames = packet.get("quic.frame", [])
        yield from frames if isinstance(frames, list) else [frames]


def _streams(pcap: Path, keys: Path | None) -> dict[str, list[object]]:
    """Each stream's bytes by offset (tshark's own follow concatenates frames in arrival
    order, retransmissions and reordering included: it is not the stream)."""
    text = _tshark(pcap, keys, "-Y", "quic", "-T", "json", "--no-duplicate-keys", "-x")
    client: tuple[str, str] | None = None
    pieces: dict[tuple[int, int], dict[int, bytes]] = {}
    for packet in json.loads(text):
        layers = packet["_source"]["layers"]
        ip = layers.get("ip") or layers.get("ipv6")
        src = (ip.get("ip.src") or ip.get("ipv6.src"), layers["udp"]["udp.srcport"])
        client = client or src
        dst = (ip.get("ip.dst") or ip.get("ipv6.dst"), layers["udp"]["udp.dstport"])
        if client not in (src, dst):
            continue  # another connection
        d = 0 if src == client else 1
        for frame in _frames(layers):
            if "quic.stream.stream_id" not in frame:
                continue
            sid = int(frame["quic.stream.stream_id"])
            offset = int(frame.get("quic.stream.offset", 0))
            raw = frame.get("quic.stream_data_raw")
            data = bytes.fromhex(raw[0] if isinstance(raw, list) else raw) if raw else b""
            pieces.setdefault((d, sid), {}).setdefault(offset, data)
    out: dict[str, list[object]] = {}
    for sid in sorted({sid for _, sid in pieces}):
        sides = []
        for d in (0, 1):
            buf = bytearray()
            for offset, data in sorted(pieces.get((d, sid), {}).items()):
                if offset > len(buf):
                    raise SystemExit(f"{pcap}: stream {sid} has a hole at {len(buf)}")
                buf[offset : offset + len(data)] = data
            sides.append(bytes(buf))
        out[str(sid)] = [
            len(sides[0]),
            len(sides[1]),
            *(hashlib.sha256(x).hexdigest() for x in sides),
        ]
    return out


def main() -> None:
    result = {name: _streams(pcap, keys) for name, (pcap, keys) in FILES.items()}
    OUT.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    for name, streams in result.items():
        print(name, len(streams), "streams")


if __name__ == "__main__":
    main()
